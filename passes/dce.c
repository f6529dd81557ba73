/* dce.c: pass_dce, dead-code elimination. A node is live when one of its outputs is
 * a graph output or an input of a live node; everything else is removed. Values stay
 * (ids are stable); unused constants are simply not referenced any more. */
#include "pass.h"

/* The pass: mark backwards from the graph outputs, then compact. */
bool pass_dce(IrGraph *g, const PassOptions *opt)
{
    (void)opt;
    bool *live = ir_scratch(g, (g->nvals ? g->nvals : 1) * sizeof *live);
    for (uint32_t i = 0; i < g->noutputs; i++)
        live[g->outputs[i]] = true;
    for (uint32_t i = g->nnodes; i-- > 0;) {
        IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        bool used = false;
        for (int k = 0; k < n->nout && !used; k++)
            used = live[n->out[k]];
        if (!used) {
            n->dead = true;
            continue;
        }
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] != IR_NONE)
                live[n->in[k]] = true;
        for (int k = 0; k < n->nattrs; k++)
            if (n->attrs[k].kind == IR_ATTR_TENSOR && n->attrs[k].tensor < g->nvals)
                live[n->attrs[k].tensor] = true;
    }
    ir_compact(g);
    return !ir_failed(g);
}
