/* cg_dyn.c: tensor-table fields of data-dependent and hidden graph outputs (bundle
 * format 1.1, sbin.h SPY_TF_*). A dynamic output keeps its upper-bound dims; its
 * descriptor names the axis and where its count lives: offset 0 of the segment of the
 * hidden output that holds it. An output whose whole shape is computed at run time
 * (SPY_TF_SHAPED) points there at its int32 dims instead.
 */
#include "cg_internal.h"

void cg_dyn_desc(IrGraph *g, uint32_t j, SpyTensorDesc *d)
{
    if (ir_output_hidden(g, j)) {
        d->flags |= SPY_TF_HIDDEN;
        return;
    }
    const IrDynDim *dd = ir_dyn_find(g, g->outputs[j]);
    if (!dd)
        return;
    for (uint32_t k = g->noutputs - g->nhidden; k < g->noutputs; k++)
        if (g->outputs[k] == dd->count) {
            d->flags |= dd->axis == IR_DYN_SHAPE ? SPY_TF_SHAPED : SPY_TF_DYNAMIC;
            d->dyn_axis = dd->axis == IR_DYN_SHAPE ? 0 : (uint8_t)dd->axis;
            d->count_seg = ISA_SEG_IO0 + g->ninputs + k;
            d->count_off = 0;
            return;
        }
    IR_ASSERT(!"dynamic output without a hidden count output");
}

bool cg_uses_scatter(const CgEmit *e)
{
    for (uint64_t i = 0; i < e->n; i++)
        if (e->code[i].opcode == ISA_SCATTER)
            return true;
    return false;
}
