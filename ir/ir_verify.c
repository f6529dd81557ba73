/* ir_verify.c: structural invariants of a graph, checked between passes.
 *
 * Checks: value ids in range; every node input defined before use (topological
 * order); arity per ops.def; outputs' def/def_slot point back at their node; each op's
 * verify hook (core ops re-infer to the stored output types); value names unique;
 * graph outputs produced.
 * Problems are reported as "internal error after pass X: ..." (they are our bugs).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "ir_priv.h"

typedef struct {
    IrGraph *g;
    const char *pass;
    int nerr;
} Vfy;

/* Report one problem (at most 20 per verification). */
__attribute__((format(printf, 2, 3))) static void bad(Vfy *v, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    if (++v->nerr > 20)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(v->g->diag, "internal error after pass %s: %s", v->pass, msg);
}

/* Value kinds and data: inputs/consts have no producer, consts have data. */
static void check_values(Vfy *v)
{
    IrGraph *g = v->g;
    for (ValId i = 0; i < g->nvals; i++) {
        const IrValue *val = &g->vals[i];
        if (!val->name)
            bad(v, "value %u has no name", i);
        else if (ir_find_value(g, val->name) != i)
            bad(v, "value name '%s' is not unique", val->name);
        if (val->kind == IR_VAL_CONST && !val->data && ir_type_bytes(&val->type) > 0)
            bad(v, "constant '%s' has no data", val->name);
        if (val->type.rank < 0 || val->type.rank > IR_MAX_RANK)
            bad(v, "value '%s' has rank %d", val->name ? val->name : "?", val->type.rank);
    }
    for (uint32_t i = 0; i < g->ninputs; i++)
        if (g->inputs[i] >= g->nvals || g->vals[g->inputs[i]].kind != IR_VAL_INPUT)
            bad(v, "graph input %u is not an input value", i);
}

/* Node n (index id): arity, inputs defined, outputs' back links; marks outputs defined. */
static void check_node(Vfy *v, NodeId id, const IrNode *n, bool *defined)
{
    IrGraph *g = v->g;
    const IrOpInfo *info = n->op < IR_OP_COUNT ? &ir_op_info[n->op] : NULL;
    const char *opn = info ? info->name : "?";
    if (!info) {
        bad(v, "node %u has unknown op %d", id, (int)n->op);
        return;
    }
    if (n->nin < info->min_in || (info->max_in >= 0 && n->nin > info->max_in) ||
        (info->nout >= 0 && n->nout != info->nout))
        bad(v, "node %u (%s) has %u inputs and %u outputs", id, opn, n->nin, n->nout);
    for (int i = 0; i < n->nin; i++) {
        ValId x = n->in[i];
        if (x == IR_NONE && (info->flags & IR_OPF_OPT_IN))
            continue;
        if (x >= g->nvals)
            bad(v, "node %u (%s) input %d is out of range", id, opn, i);
        else if (!defined[x])
            bad(v, "node %u (%s) uses '%s' before it is defined", id, opn, g->vals[x].name);
    }
    for (uint32_t i = 0; i < n->nout; i++) {
        ValId o = n->out[i];
        if (o >= g->nvals) {
            bad(v, "node %u (%s) output %u is out of range", id, opn, i);
            continue;
        }
        const IrValue *val = &g->vals[o];
        if (val->kind != IR_VAL_ACT || val->def != id || val->def_slot != i)
            bad(v, "value '%s' (output %u of node %u, %s) has def %u slot %u kind %d",
                val->name, i, id, opn, val->def, val->def_slot, (int)val->kind);
        else if (defined[o])
            bad(v, "value '%s' is defined twice", val->name);
        defined[o] = true;
    }
}

/* Verify hook of the core ops: inference on the current inputs gives the stored output
 * types (at most 8 outputs are compared). */
bool ir_verify_core(IrGraph *g, const IrNode *n, char *err, size_t errlen)
{
    IrType outs[8];
    bool quiet;
    if (n->nout > 8)
        return true;
    if (!ir_infer_types(g, n, outs, err, errlen, &quiet))
        return false;
    for (int i = 0; i < n->nout; i++)
        if (n->out[i] < g->nvals && !ir_type_eq(&outs[i], &g->vals[n->out[i]].type)) {
            snprintf(err, errlen, "output '%s' has a stale type", g->vals[n->out[i]].name);
            return false;
        }
    return true;
}

/* Verify hook of FOREIGN: its attributes are as imported; nothing beyond arity. */
bool ir_verify_foreign(IrGraph *g, const IrNode *n, char *err, size_t errlen)
{
    (void)g;
    (void)n;
    (void)err;
    (void)errlen;
    return true;
}

/* The op's own invariants (its verify hook in ops.def) once its inputs are in range. */
static void check_op(Vfy *v, NodeId id, const IrNode *n)
{
    IrGraph *g = v->g;
    char err[512];
    if (n->op >= IR_OP_COUNT)
        return;                            /* already reported */
    bool opt = ir_op_info[n->op].flags & IR_OPF_OPT_IN;
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] >= g->nvals && !(opt && n->in[i] == IR_NONE))
            return;                        /* already reported */
    if (!ir_op_info[n->op].verify(g, n, err, sizeof err))
        bad(v, "node %u (%s, from '%s'): %s", id, ir_op_info[n->op].name, n->origin.name, err);
}

/* Data-dependent extents: valid values and axes, i32 scalar counts. */
static void check_dyn(Vfy *v)
{
    IrGraph *g = v->g;
    if (g->nhidden > g->noutputs)
        bad(v, "%u hidden outputs of %u", g->nhidden, g->noutputs);
    for (uint32_t i = 0; i < g->ndyn; i++) {
        const IrDynDim *d = &g->dyn[i];
        if (d->value >= g->nvals || d->count >= g->nvals) {
            bad(v, "dynamic extent %u names a value out of range", i);
            continue;
        }
        const IrType *ct = &g->vals[d->count].type;
        if (d->axis == IR_DYN_SHAPE) {
            if (ct->rank != 1 || ct->dtype != IR_DT_I32 ||
                ct->dims[0] != g->vals[d->value].type.rank)
                bad(v, "runtime shape %u of '%s': '%s' is not an i32 vector of its rank", i,
                    g->vals[d->value].name, g->vals[d->count].name);
        } else if (d->axis < 0 || d->axis >= g->vals[d->value].type.rank || ct->rank != 0 ||
                   ct->dtype != IR_DT_I32)
            bad(v, "dynamic extent %u of '%s': axis %d, count '%s' is not an i32 scalar", i,
                g->vals[d->value].name, d->axis, g->vals[d->count].name);
    }
}

bool ir_verify(IrGraph *g, const char *after_pass)
{
    Vfy v = {g, after_pass ? after_pass : "?", 0};
    bool *defined = calloc(g->nvals ? g->nvals : 1, sizeof *defined);
    if (!defined)
        ir_oom(g);
    check_values(&v);
    for (ValId i = 0; i < g->nvals; i++)
        defined[i] = g->vals[i].kind != IR_VAL_ACT;
    for (NodeId i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead)
            continue;
        check_node(&v, i, n, defined);
        check_op(&v, i, n);
    }
    for (uint32_t i = 0; i < g->noutputs; i++) {
        ValId o = g->outputs[i];
        if (o >= g->nvals || !defined[o])
            bad(&v, "graph output %u ('%s') is never produced", i,
                o < g->nvals ? g->vals[o].name : "?");
    }
    check_dyn(&v);
    free(defined);
    return v.nerr == 0;
}
