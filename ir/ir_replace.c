/* ir_replace.c: replacing the uses of values, in the nodes (also the list detached by
 * ir_rewrite_begin), the data-dependent extents and the graph outputs, whose names
 * stay with the outputs. One replacement scans the graph (ir_replace_uses); the
 * replacements of all graph outputs share one scan (ir_replace_outputs).
 */
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

/* True if v is one of the graph's outputs. */
static bool is_graph_output(IrGraph *g, ValId v)
{
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* Replace from by to in the inputs of the live nodes of list[0..n). */
static void replace_in(IrNode *list, uint32_t n, ValId from, ValId to)
{
    for (uint32_t i = 0; i < n; i++) {
        IrNode *nd = &list[i];
        if (nd->dead)
            continue;
        for (int k = 0; k < nd->nin; k++)
            if (nd->in[k] == from)
                nd->in[k] = to;
    }
}

/* Graph output from hands its name to internal value to (which hands its own back). */
static void hand_over_name(IrGraph *g, ValId from, ValId to)
{
    const char *fname = g->vals[from].name, *tname = g->vals[to].name;
    ir_set_name(g, from, "");              /* frees from's name */
    ir_set_name(g, to, fname);
    ir_set_name(g, from, tname);
}

/* Replace every use of from by to, in the node list and in the list detached by the
 * last ir_rewrite_begin (so nodes not yet re-added see it too). When from is a graph
 * output and to is an internal value (not an input, not already an output), the two
 * swap names so that the user-visible output name is kept. */
void ir_replace_uses(IrGraph *g, ValId from, ValId to)
{
    IR_ASSERT(from < g->nvals && to < g->nvals);
    if (from == to)
        return;
    for (uint32_t i = 0; i < g->ndyn; i++) {  /* data-dependent extents (ir_dyn.c) */
        if (g->dyn[i].value == from)
            g->dyn[i].value = to;
        if (g->dyn[i].count == from)
            g->dyn[i].count = to;
    }
    uint32_t ndet;
    IrNode *det = ir_detached(g, &ndet);
    replace_in(g->nodes, g->nnodes, from, to);
    if (det)
        replace_in(det, ndet, from, to);
    if (!is_graph_output(g, from))
        return;
    if (g->vals[to].kind != IR_VAL_INPUT && !is_graph_output(g, to))
        hand_over_name(g, from, to);
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == from)
            g->outputs[i] = to;
}

/* Replacements in flight: the values that became one value form a set (a union-find
 * tree over value ids) labelled with the value they now are. */
typedef struct {
    ValId *parent;                         /* union-find forest over value ids */
    ValId *label;                          /* root -> the value its set now is */
    ValId *set;                            /* value -> root of the set now it (or IR_NONE) */
    uint32_t *nout;                        /* value -> output positions now holding it */
    uint32_t n;                            /* values (ids at the start) */
} Repl;

/* Root of the set of value x (path halving). */
static ValId repl_root(Repl *r, ValId x)
{
    while (r->parent[x] != x) {
        r->parent[x] = r->parent[r->parent[x]];
        x = r->parent[x];
    }
    return x;
}

/* The value that value x (an id from the start, or IR_NONE) has become. */
static ValId repl_now(Repl *r, ValId x)
{
    return x < r->n ? r->label[repl_root(r, x)] : x;
}

/* Replace from by to: every value that is now from becomes to. */
static void repl_merge(Repl *r, ValId from, ValId to)
{
    ValId rf = r->set[from], rt = r->set[to];
    if (rf == IR_NONE)
        return;
    if (rt == IR_NONE) {
        r->set[to] = rf;
        r->label[rf] = to;
    } else {
        r->parent[rf] = rt;
    }
    r->set[from] = IR_NONE;
    r->nout[to] += r->nout[from];
    r->nout[from] = 0;
}

/* Rewrite the inputs of the live nodes of list[0..n) to what they have become. */
static void repl_apply(Repl *r, IrNode *list, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        for (int k = 0; !list[i].dead && k < list[i].nin; k++)
            list[i].in[k] = repl_now(r, list[i].in[k]);
}

/* See ir.h. The outputs' replacements, their name hand-overs included, run in order on
 * the sets; nodes, extents and outputs then take what their values have become. */
void ir_replace_outputs(IrGraph *g, ValId (*map)(void *ctx, ValId v), void *ctx)
{
    Repl r = {.n = g->nvals};
    size_t bytes = ((size_t)r.n + 1) * sizeof(ValId);
    r.parent = ir_scratch(g, bytes);
    r.label = ir_scratch(g, bytes);
    r.set = ir_scratch(g, bytes);
    r.nout = ir_scratch(g, bytes);
    for (ValId v = 0; v < r.n; v++)
        r.parent[v] = r.label[v] = r.set[v] = v;
    for (uint32_t i = 0; i < g->noutputs; i++)
        r.nout[g->outputs[i]]++;
    bool any = false;
    for (uint32_t i = 0; i < g->noutputs; i++) {
        ValId v = repl_now(&r, g->outputs[i]), to = map(ctx, v);
        if (to == v)
            continue;
        IR_ASSERT(to < r.n);
        if (g->vals[to].kind != IR_VAL_INPUT && r.nout[to] == 0)
            hand_over_name(g, v, to);
        repl_merge(&r, v, to);
        any = true;
    }
    if (!any)
        return;
    for (uint32_t i = 0; i < g->ndyn; i++) {
        g->dyn[i].value = repl_now(&r, g->dyn[i].value);
        g->dyn[i].count = repl_now(&r, g->dyn[i].count);
    }
    uint32_t ndet;
    IrNode *det = ir_detached(g, &ndet);
    repl_apply(&r, g->nodes, g->nnodes);
    if (det)
        repl_apply(&r, det, ndet);
    for (uint32_t i = 0; i < g->noutputs; i++)
        g->outputs[i] = repl_now(&r, g->outputs[i]);
}
