/* ir_dyn.c: the graph's table of data-dependent extents (IrDynDim) and its hidden
 * outputs. Entries are added by the decompositions of NonZero, Compress, Unique and
 * NonMaxSuppression (one axis) and by those of Reshape, Squeeze, Unsqueeze and the
 * reductions with runtime shape or axes inputs (IR_DYN_SHAPE); ir_replace_uses (ir.c)
 * keeps their value ids current, and pass_dynamic (passes/dynamic.c) carries them through the ops that follow to the
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

/* Append the entry (v, axis, count) to the table and keep count as a hidden output. */
static void dyn_append(IrGraph *g, ValId v, int axis, ValId count)
{
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

/* Record v's data-dependent extent along axis (an i32 scalar count). */
void ir_dyn_add(IrGraph *g, ValId v, int axis, ValId count)
{
    const IrType *t = ir_vtype(g, v), *ct = ir_vtype(g, count);
    IR_ASSERT(axis >= 0 && axis < t->rank && ct->dtype == IR_DT_I32 && ct->rank == 0);
    dyn_append(g, v, axis, count);
}

/* Record v's runtime shape (an i32 vector of its rank). */
void ir_dyn_add_shape(IrGraph *g, ValId v, ValId dims)
{
    const IrType *t = ir_vtype(g, v), *ct = ir_vtype(g, dims);
    IR_ASSERT(ct->dtype == IR_DT_I32 && ct->rank == 1 && ct->dims[0] == t->rank);
    dyn_append(g, v, IR_DYN_SHAPE, dims);
}

const IrDynDim *ir_dyn_find(const IrGraph *g, ValId v)
{
    for (uint32_t i = 0; i < g->ndyn; i++)
        if (g->dyn[i].value == v)
            return &g->dyn[i];
    return NULL;
}

/* Depth-first search from v over the defining nodes for a graph input; IR_NONE if
 * none (seen marks visited values). */
static ValId find_input(const IrGraph *g, ValId v, bool *seen)
{
    if (v == IR_NONE || seen[v])
        return IR_NONE;
    seen[v] = true;
    if (g->vals[v].kind == IR_VAL_INPUT)
        return v;
    NodeId d = g->vals[v].def;
    if (d == IR_NONE)
        return IR_NONE;
    for (int i = 0; i < g->nodes[d].nin; i++) {
        ValId r = find_input(g, g->nodes[d].in[i], seen);
        if (r != IR_NONE)
            return r;
    }
    return IR_NONE;
}

/* A graph input that v is computed from (v when none), to name in messages. */
ValId ir_dyn_source_input(IrGraph *g, ValId v)
{
    bool *seen = ir_scratch(g, g->nvals + 1);
    ValId r = find_input(g, v, seen);
    return r != IR_NONE ? r : v;
}

/* Record axis of input v as a bounded symbolic dimension named nm; inputs sharing a
 * name share the symbol (the tightest bounds win). */
void ir_sym_add(IrGraph *g, ValId v, int axis, int64_t min, int64_t max, const char *nm)
{
    int sym = ir_sym_count(g);
    for (uint32_t i = 0; i < g->nsymdims; i++)
        if (!strcmp(g->symdims[i].name, nm))
            sym = g->symdims[i].sym;
    IrSymDim *d = ir_alloc(g, (g->nsymdims + 1) * sizeof *d);
    if (g->nsymdims)
        memcpy(d, g->symdims, g->nsymdims * sizeof *d);
    d[g->nsymdims] = (IrSymDim){v, axis, sym, min, max, ir_strdup(g, nm), false, 0};
    g->symdims = d;
    g->nsymdims++;
}

/* Number of distinct symbols in the table. */
int ir_sym_count(const IrGraph *g)
{
    int n = 0;
    for (uint32_t i = 0; i < g->nsymdims; i++)
        if (g->symdims[i].sym + 1 > n)
            n = g->symdims[i].sym + 1;
    return n;
}
