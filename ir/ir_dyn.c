/* ir_dyn.c: the graph's table of data-dependent extents (IrDynDim) and its hidden
 * outputs. Entries are added by the decompositions of NonZero, Compress, Unique and
 * NonMaxSuppression; ir_replace_uses (ir.c) keeps their value ids current, and
 * pass_dynamic (passes/dynamic.c) carries them through the ops that follow to the
 * graph outputs, whose tensor descriptors then tell the runtime where each count is.
 */
#include <string.h>

#include "ir.h"

/* Append v as a hidden graph output unless it already is one. */
void ir_add_hidden_output(IrGraph *g, ValId v)
{
    IR_ASSERT(v < g->nvals);
    for (uint32_t i = g->noutputs - g->nhidden; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return;
    uint32_t nvis = g->noutputs - g->nhidden;
    ir_add_output(g, v);                   /* inserted before the hidden ones */
    IR_ASSERT(g->outputs[nvis] == v);
    memmove(g->outputs + nvis, g->outputs + nvis + 1, (size_t)g->nhidden * sizeof(ValId));
    g->outputs[g->noutputs - 1] = v;
    g->nhidden++;
}

bool ir_output_hidden(const IrGraph *g, uint32_t i)
{
    return i < g->noutputs && i >= g->noutputs - g->nhidden;
}

void ir_dyn_add(IrGraph *g, ValId v, int axis, ValId count)
{
    const IrType *t = ir_vtype(g, v), *ct = ir_vtype(g, count);
    IR_ASSERT(axis >= 0 && axis < t->rank && ct->dtype == IR_DT_I32 && ct->rank == 0);
    if (g->ndyn == g->capdyn) {
        uint32_t nc = g->capdyn ? 2 * g->capdyn : 8;
        IrDynDim *d = ir_alloc(g, nc * sizeof *d);
        if (g->ndyn)
            memcpy(d, g->dyn, g->ndyn * sizeof *d);
        g->dyn = d;
        g->capdyn = nc;
    }
    g->dyn[g->ndyn++] = (IrDynDim){v, axis, count};
    ir_add_hidden_output(g, count);
}

const IrDynDim *ir_dyn_find(const IrGraph *g, ValId v)
{
    for (uint32_t i = 0; i < g->ndyn; i++)
        if (g->dyn[i].value == v)
            return &g->dyn[i];
    return NULL;
}
