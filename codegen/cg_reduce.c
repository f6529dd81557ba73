/* cg_reduce.c: REDUCE, ARGREDUCE, WINDOW and CUMSUM work items.
 *
 * A work item is a box of the kept dims (rows of the tile). For each chunk of the
 * reduced dims the prologue tile program loads the input box with the reduced dims
 * innermost (the DMA permutes through strides; for pooling the window taps are
 * strided dims of the same load, im2col-like) and applies the prologue; one VREDUCE
 * folds each row into the accumulator (ISA_F_ACCUM after the first chunk), or one
 * VSCAN scans each row (CUMSUM, whole axis). The epilogue program then runs on the
 * accumulator and stores the result.
 */
#include <string.h>

#include "cg_internal.h"

/* VREDUCE function of a REDUCE/ARGREDUCE/WINDOW node. */
static uint8_t red_fn(const IrNode *a)
{
    int fn = (int)ir_attr_get_int(a, "fn", 0);
    if (a->op == IR_OP_ARGREDUCE)
        return fn == IR_RED_MAX ? ISA_RF_ARGMAX : ISA_RF_ARGMIN;
    switch (fn) {
    case IR_RED_SUM: return ISA_RF_SUM;
    case IR_RED_PROD: return ISA_RF_PROD;
    case IR_RED_MAX: return ISA_RF_MAX;
    default: return ISA_RF_MIN;
    }
}

/* Row and element strides of the prologue result of class cls in a rows x len tile. */
static void src_strides(uint8_t cls, int64_t len, int32_t *rs, int32_t *cs)
{
    *rs = cls == IR_TC_FULL ? (int32_t)len : cls == IR_TC_ROW ? 1 : 0;
    *cs = (cls & IR_TC_COL) ? 1 : 0;
}

/* The reduction (or scan) instruction for one chunk. */
static void reduce_chunk(CgEmit *e, const IrKernel *k, const IrNode *a, int64_t rows,
                         int64_t len, bool accum)
{
    const IrTileVal *x = &k->tp[0].vals[k->tp[0].result];
    SpyInsn in;
    memset(&in, 0, sizeof in);
    if (a->op == IR_OP_CUMSUM) {
        SpyVScan *s = &in.scan;
        s->opcode = ISA_VSCAN;
        s->dtype = x->dtype;
        s->flags = (ir_attr_get_int(a, "exclusive", 0) ? ISA_F_EXCL : 0) |
                   (ir_attr_get_int(a, "reverse", 0) ? ISA_F_REV : 0);
        s->dst = k->buf[0];
        s->src = x->lx;
        s->rows = (uint32_t)rows;
        s->len = (uint32_t)len;
        s->src_rs = (int32_t)len;
        s->dst_rs = (int32_t)len;
    } else {
        SpyVReduce *r = &in.red;
        r->opcode = ISA_VREDUCE;
        r->dtype = x->dtype;
        r->fn = red_fn(a);
        bool arg = a->op == IR_OP_ARGREDUCE;
        r->flags = (accum && !arg ? ISA_F_ACCUM : 0) |
                   (arg && ir_attr_get_int(a, "select_last", 0) ? ISA_F_LAST : 0);
        r->dst = k->buf[0];
        r->src = x->lx;
        r->rows = (uint32_t)rows;
        r->len = (uint32_t)len;
        src_strides(x->cls, len, &r->src_rs, &r->src_cs);
        r->dst_rs = 1;
    }
    cg_push(e, &in);
}

void cg_reduce_item(CgEmit *e, const IrKernel *k, const int64_t *start, const int64_t *len)
{
    const IrNode *a = ir_node(e->g, k->anchor);
    int ng = k->grid.rank, ni = k->inner.rank;
    int64_t st[IR_ITER_MAX] = {0}, ln[IR_ITER_MAX] = {0}, rows = 1;
    for (int d = 0; d < ng; d++) {
        st[d] = start[d];
        ln[d] = len[d];
        rows *= len[d];
    }
    int64_t nchunks = plan_grid_items(&k->inner);
    for (int64_t j = 0; j < nchunks; j++) {
        int64_t len_red = 1;
        plan_grid_item(&k->inner, (uint64_t)j, st + ng, ln + ng);
        for (int d = 0; d < ni; d++)
            len_red *= ln[ng + d];
        cg_tp_run(e, &k->tp[0], st, ln);
        reduce_chunk(e, k, a, rows, len_red, j > 0);
    }
    if (nchunks == 0 && a->op != IR_OP_CUMSUM) {   /* empty reduction: the identity */
        SpyInsn in;
        memset(&in, 0, sizeof in);
        in.red.opcode = ISA_VREDUCE;
        in.red.dtype = (uint8_t)pass_dev_dtype(ir_vtype(e->g, a->in[0])->dtype);
        in.red.fn = red_fn(a);
        in.red.dst = k->buf[0];
        in.red.src = k->buf[0];
        in.red.rows = (uint32_t)rows;
        in.red.dst_rs = 1;
        cg_push(e, &in);
    }
    if (a->op == IR_OP_CUMSUM)
        cg_tp_run(e, &k->tp[1], st, ln);
    else
        cg_tp_run(e, &k->tp[1], start, len);
}
