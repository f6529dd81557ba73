/* cg_scatter.c: SCATTER work items (the compaction step of data-dependent ops).
 *
 * The kernel's grid is the updates' [N, R] (the output's when N = 0); every item runs
 * on core 0 (plan_assign_cores) in order, so that the first item can zero the whole
 * output before any row is scattered into it. An item:
 *   first item only: VFILL the tile buffer with 0, STORE it over the output
 *   LOAD the item's row indices (int32 on the device) into buf[1]
 *   LOAD the updates box [rows, cols] into buf[0] (row-major)
 *   SCATTER the rows to the output rows their indices name (indices outside
 *   [0, size) skip their row)
 */
#include <string.h>

#include "cg_internal.h"

/* Zero the output of SCATTER node n (view ov, [size, R]) from a zeroed tile buffer. */
static void zero_output(CgEmit *e, const IrKernel *k, const IrNode *n, unsigned es)
{
    const IrType *ot = ir_vtype(e->g, n->out[0]);
    const IrView *ov = &e->s->val[n->out[0]].view;
    int64_t size = ot->dims[0], r = ot->dims[1], cap = k->buf_bytes[0] / es;
    if (size == 0 || r == 0)
        return;
    IR_ASSERT(cap > 0);
    cg_push_fill(e, pass_dev_dtype(ot->dtype), k->buf[0], (uint32_t)cap, 0);
    uint32_t seg;
    int64_t base;
    cg_root(e, ov->root, &seg, &base);
    int64_t rows = r <= cap ? cap / r : 1, cols = r <= cap ? r : cap;
    for (int64_t r0 = 0; r0 < size; r0 += rows)
        for (int64_t c0 = 0; c0 < r; c0 += cols) {
            CgDims d = {0};
            cg_dims_add(&d, size - r0 < rows ? size - r0 : rows, ov->stride[0], cols);
            cg_dims_add(&d, r - c0 < cols ? r - c0 : cols, ov->stride[1], 1);
            int64_t el = ov->off + r0 * ov->stride[0] + c0 * ov->stride[1];
            cg_dma(e, ISA_STORE, seg, base + el * (int64_t)es, k->buf[0], es, &d);
        }
}

/* Load rows [start, start+len) of 1-d or 2-d value v (box of 2 dims) into LX at lx. */
static void load_box(CgEmit *e, ValId v, const int64_t *start, const int64_t *len, int nd,
                     uint32_t lx, unsigned es)
{
    const IrView *vw = &e->s->val[v].view;
    CgDims d = {0};
    int64_t el = vw->off;
    for (int i = 0; i < nd; i++) {
        cg_dims_add(&d, len[i], vw->stride[i], 0);
        el += start[i] * vw->stride[i];
    }
    cg_dims_dense_lx(&d);
    uint32_t seg;
    int64_t off;
    cg_root(e, vw->root, &seg, &off);
    cg_dma(e, ISA_LOAD, seg, off + el * (int64_t)es, lx, es, &d);
}

/* One SCATTER item: the box [start, start+len) of the updates' [N, R]. */
void cg_scatter_item(CgEmit *e, const IrKernel *k, const IrNode *n, const int64_t *start,
                     const int64_t *len)
{
    const IrType *ot = ir_vtype(e->g, n->out[0]);
    const IrView *ov = &e->s->val[n->out[0]].view;
    unsigned es = (unsigned)pass_dev_esize(ot->dtype);
    if (start[0] == 0 && start[1] == 0)
        zero_output(e, k, n, es);
    if (len[0] == 0 || len[1] == 0 || ir_vtype(e->g, n->in[0])->dims[0] == 0)
        return;                            /* no updates: the grid is the output's */
    IR_ASSERT(len[1] == 1 || ov->stride[1] == 1);
    load_box(e, n->in[1], start, len, 1, k->buf[1], 4);
    load_box(e, n->in[0], start, len, 2, k->buf[0], es);
    uint32_t seg;
    int64_t base;
    cg_root(e, ov->root, &seg, &base);
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyScatter *s = &in.scatter;
    s->opcode = ISA_SCATTER;
    s->esize = (uint8_t)es;
    s->seg = seg;
    s->dram_off = base + (ov->off + start[1] * ov->stride[1]) * (int64_t)es;
    s->row_stride = ov->stride[0];
    s->lx_src = k->buf[0];
    s->lx_idx = k->buf[1];
    s->nidx = (uint32_t)len[0];
    s->row_elems = (uint32_t)len[1];
    s->bound = (uint32_t)ot->dims[0];
    s->src_row_stride = (uint32_t)len[1];
    cg_push(e, &in);
}
