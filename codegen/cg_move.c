/* cg_move.c: data-movement work items. A work item is a box of the output (a RESHAPE
 * copy: of the input) assembled in one LX tile and stored with one DMA:
 *   view copy (TRANSPOSE/SLICE/EXPAND/RESHAPE materialised, graph-output COPY):
 *            LOAD through the source's strided view (negative strides for reversed
 *            slices, 0 for broadcast), STORE
 *   PAD      VFILL the tile with the pad value (unless the input covers it), LOAD the
 *            overlapping input region into place (interior padding multiplies the
 *            LX strides), STORE
 *   CONCAT   per input overlapping the box, LOAD its part at its offset, STORE
 *   GATHER   LOAD the box's indices (int32 on the device), one ISA_GATHER per outer
 *            index straight into the tile (negative indices wrap; out of range stops
 *            the run), STORE
 */
#include <string.h>

#include "cg_internal.h"

/* Row-major LX strides of a box with extents len[0..r). */
static void box_strides(const int64_t *len, int r, int64_t *ts)
{
    int64_t s = 1;
    for (int i = r - 1; i >= 0; i--) {
        ts[i] = s;
        s *= len[i];
    }
}

/* Floor division for a possibly negative numerator (b > 0). */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Load (or store) a box through access a; LX row-major at k->buf[0]. */
static void box_dma(CgEmit *e, const IrKernel *k, uint8_t op, const IrAccess *a,
                    const int64_t *start, const int64_t *len, unsigned esize)
{
    CgDims d = {0};
    for (int i = 0; i < k->grid.rank; i++)
        cg_dims_add(&d, len[i], a->is[i], 0);
    cg_dims_dense_lx(&d);
    uint32_t seg;
    int64_t off;
    if (a->root == IR_NONE) {                 /* a graph output's own segment */
        seg = ISA_SEG_IO0 + e->g->ninputs + k->out_index;
        off = 0;
        for (int i = 0; i < k->grid.rank; i++)
            off += a->is[i] * start[i];
        off = (off + a->base) * (int64_t)esize;
    } else {
        cg_access_at(e, a, start, k->grid.rank, esize, &seg, &off);
    }
    cg_dma(e, op, seg, off, k->buf[0], esize, &d);
}

/* Load the part [lo, lo+cnt) (per dim) of value v (view) into the tile at element
 * offset lx_elems with LX strides ls. */
static void load_part(CgEmit *e, ValId v, const int64_t *lo, const int64_t *cnt,
                      const int64_t *ls, int64_t lx_elems, uint32_t lx0, int r, unsigned es)
{
    const IrView *vw = &e->s->val[v].view;
    CgDims d = {0};
    int64_t el = vw->off;
    for (int i = 0; i < r; i++) {
        cg_dims_add(&d, cnt[i], vw->stride[i], ls[i]);
        el += lo[i] * vw->stride[i];
    }
    uint32_t seg;
    int64_t off;
    cg_root(e, vw->root, &seg, &off);
    cg_dma(e, ISA_LOAD, seg, off + el * (int64_t)es, lx0 + (uint32_t)(lx_elems * es), es, &d);
}

/* PAD item: fill, load the covered input region with interior strides. */
static void pad_item(CgEmit *e, const IrKernel *k, const IrNode *n, const int64_t *start,
                     const int64_t *len, unsigned es)
{
    const IrType *it = ir_vtype(e->g, n->in[0]);
    int r = it->rank;
    const int64_t *pads = NULL, *inter = NULL;
    ir_attr_get_ints(n, "pads", &pads);
    bool has_inter = ir_attr_get_ints(n, "interior", &inter) == r;
    int64_t ts[IR_MAX_RANK], lo[IR_MAX_RANK], cnt[IR_MAX_RANK], ls[IR_MAX_RANK], lxe = 0;
    box_strides(len, r, ts);
    bool covered = true, empty = false;
    for (int i = 0; i < r; i++) {
        int64_t step = 1 + (has_inter ? inter[i] : 0), p = pads[i];
        int64_t a = floor_div(start[i] - p + step - 1, step);
        int64_t b = floor_div(start[i] + len[i] - 1 - p, step);
        a = a < 0 ? 0 : a;
        b = b > it->dims[i] - 1 ? it->dims[i] - 1 : b;
        lo[i] = a;
        cnt[i] = b - a + 1;
        ls[i] = ts[i] * step;
        if (cnt[i] <= 0)
            empty = true;
        else
            lxe += (p + a * step - start[i]) * ts[i];
        covered &= cnt[i] == len[i];
    }
    if (!covered) {
        int64_t total = 1;
        for (int i = 0; i < r; i++)
            total *= len[i];
        int dt = pass_dev_dtype(it->dtype);
        cg_push_fill(e, dt, k->buf[0], (uint32_t)total,
                     cg_value_bits(dt, ir_attr_get_float(n, "value", 0.0)));
    }
    if (!empty)
        load_part(e, n->in[0], lo, cnt, ls, lxe, k->buf[0], r, es);
    box_dma(e, k, ISA_STORE, &k->acc[1], start, len, es);
}

/* CONCAT item: each input's part of the box at its offset along the axis. */
static void concat_item(CgEmit *e, const IrKernel *k, const IrNode *n, const int64_t *start,
                        const int64_t *len, unsigned es)
{
    int ax = (int)ir_attr_get_int(n, "axis", 0), r = k->grid.rank;
    int64_t ts[IR_MAX_RANK], lo[IR_MAX_RANK], cnt[IR_MAX_RANK], pos = 0;
    box_strides(len, r, ts);
    for (int j = 0; j < n->nin; j++) {
        int64_t ext = ir_vtype(e->g, n->in[j])->dims[ax];
        int64_t a = start[ax] > pos ? start[ax] : pos;
        int64_t b = start[ax] + len[ax] < pos + ext ? start[ax] + len[ax] : pos + ext;
        if (a < b) {
            for (int i = 0; i < r; i++) {
                lo[i] = i == ax ? a - pos : start[i];
                cnt[i] = i == ax ? b - a : len[i];
            }
            load_part(e, n->in[j], lo, cnt, ts, (a - start[ax]) * ts[ax], k->buf[0], r, es);
        }
        pos += ext;
    }
    box_dma(e, k, ISA_STORE, &k->acc[1], start, len, es);
}

/* GATHER item: output dims [pre..., idx..., post...]. */
static void gather_item(CgEmit *e, const IrKernel *k, const IrNode *n, const int64_t *start,
                        const int64_t *len, unsigned es)
{
    const IrType *dt = ir_vtype(e->g, n->in[0]), *xt = ir_vtype(e->g, n->in[1]);
    const IrView *dv = &e->s->val[n->in[0]].view;
    int ax = (int)ir_attr_get_int(n, "axis", 0), ri = xt->rank;
    int64_t jn = 1, cn = 1, c0 = 0, npre = 1;
    for (int i = 0; i < ri; i++)
        jn *= len[ax + i];
    for (int i = ax + 1; i < dt->rank; i++) {  /* post range: contiguous within a row */
        int o = i - 1 + ri;
        c0 = c0 * dt->dims[i] + start[o];
        cn *= len[o];
    }
    for (int i = 0; i < ax; i++)
        npre *= len[i];
    int64_t ls[IR_MAX_RANK] = {0};
    box_strides(len + ax, ri, ls);
    load_part(e, n->in[1], start + ax, len + ax, ls, 0, k->buf[1], ri, 4);
    uint32_t seg;
    int64_t base;
    cg_root(e, dv->root, &seg, &base);
    for (int64_t p = 0; p < npre; p++) {
        int64_t q = p, el = dv->off + c0;
        for (int i = ax - 1; i >= 0; i--) {
            el += (start[i] + q % len[i]) * dv->stride[i];
            q /= len[i];
        }
        SpyInsn in;
        memset(&in, 0, sizeof in);
        SpyGather *gt = &in.gather;
        gt->opcode = ISA_GATHER;
        gt->esize = (uint8_t)es;
        gt->seg = seg;
        gt->dram_off = base + el * (int64_t)es;
        gt->row_stride = dv->stride[ax];
        gt->lx_dst = k->buf[0] + (uint32_t)(p * jn * cn * (int64_t)es);
        gt->lx_idx = k->buf[1];
        gt->nidx = (uint32_t)jn;
        gt->row_elems = (uint32_t)cn;
        gt->bound = (uint32_t)dt->dims[ax];
        gt->dst_row_stride = (uint32_t)cn;
        cg_push(e, &in);
    }
    box_dma(e, k, ISA_STORE, &k->acc[1], start, len, es);
}

void cg_move_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    unsigned es = (unsigned)pass_dev_esize(ir_vtype(e->g, k->out)->dtype);
    const IrNode *n = k->anchor != IR_NONE ? ir_node(e->g, k->anchor) : NULL;
    if (n && n->op == IR_OP_PAD) {
        pad_item(e, k, n, start, len, es);
    } else if (n && n->op == IR_OP_CONCAT) {
        concat_item(e, k, n, start, len, es);
    } else if (n && n->op == IR_OP_GATHER) {
        gather_item(e, k, n, start, len, es);
    } else if (n && n->op == IR_OP_SCATTER) {
        cg_scatter_item(e, k, n, start, len);
    } else {
        box_dma(e, k, ISA_LOAD, &k->acc[0], start, len, es);
        box_dma(e, k, ISA_STORE, &k->acc[1], start, len, es);
    }
}
