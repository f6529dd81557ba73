/* spyrec_dot.c: the IR as a Graphviz digraph (spyrec --emit=dot).
 *
 *   digraph "model.onnx" {
 *     v0 [shape=ellipse, label="input x\nf32[2,3,32,32]"];
 *     subgraph cluster_k0 { label="k0_conv_add_relu (contract)"; n3; n4; n5; }
 *     n3 [shape=box, label="conv\nf32[2,8,32,32]", tooltip="'conv1' (Conv)"];
 *     v0 -> n3;
 *   }
 *
 * Node ids: nI for node I, vV for graph inputs and constants, oK for output K.
 * Everything is emitted in index order, so the same graph gives the same text.
 */
#include <string.h>

#include "cli/cli.h"
#include "passes/plan/plan.h"
#include "passes/pass.h"

/* Write s as the body of a dot string (quotes and backslashes escaped). */
static void put_esc(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

/* "f32[2,3,32,32]" of value v. */
static void put_type(FILE *f, IrGraph *g, ValId v)
{
    const IrType *t = ir_vtype(g, v);
    const char *dn = ir_dtype_name(t->dtype);
    fprintf(f, "%s[", dn ? dn : "?");
    for (int d = 0; d < t->rank; d++)
        fprintf(f, d ? ",%lld" : "%lld", (long long)t->dims[d]);
    fputc(']', f);
}

/* The op of n as shown: "conv", "binary add", "reduce sum", or a foreign op type. */
static void put_op(FILE *f, const IrNode *n)
{
    if (n->op == IR_OP_FOREIGN) {
        if (n->foreign.domain && *n->foreign.domain && strcmp(n->foreign.domain, "ai.onnx")) {
            put_esc(f, n->foreign.domain);
            fputs("::", f);
        }
        put_esc(f, n->foreign.op_type ? n->foreign.op_type : "?");
        return;
    }
    fputs(ir_op_info[n->op].name, f);
    const IrAttr *fn = ir_attr_find(n, "fn");
    if (fn && fn->kind == IR_ATTR_INT) {
        const char *s = n->op == IR_OP_UNARY    ? ir_unfn_name((int)fn->i)
                        : n->op == IR_OP_BINARY ? ir_binfn_name((int)fn->i)
                                                : ir_redfn_name((int)fn->i);
        if (s)
            fprintf(f, " %s", s);
    }
    if (n->op == IR_OP_CAST)
        fprintf(f, " %s", ir_dtype_name((IrDType)ir_attr_get_int(n, "to", 0)));
}

/* One node box: op, output types, and its origin as the tooltip. */
static void put_node(FILE *f, IrGraph *g, NodeId i, const char *indent)
{
    const IrNode *n = &g->nodes[i];
    fprintf(f, "%sn%u [shape=box, label=\"", indent, i);
    put_op(f, n);
    for (int k = 0; k < n->nout; k++) {
        if (n->out[k] == IR_NONE)
            continue;
        fputs("\\n", f);
        put_type(f, g, n->out[k]);
    }
    fputs("\", tooltip=\"", f);
    fputc('\'', f);
    put_esc(f, n->origin.name ? n->origin.name : "");
    fputs("' (", f);
    put_esc(f, n->origin.op_type ? n->origin.op_type : "?");
    fputs(")\"];\n", f);
}

/* Inputs and constants used by live nodes, as their own shapes. */
static void put_sources(FILE *f, IrGraph *g, const uint8_t *used)
{
    for (ValId v = 0; v < g->nvals; v++) {
        const IrValue *val = &g->vals[v];
        if (val->def != IR_NONE || !used[v])
            continue;
        bool in = val->kind == IR_VAL_INPUT;
        fprintf(f, "  v%u [shape=%s, label=\"%s ", v, in ? "ellipse" : "note",
                in ? "input" : "const");
        put_esc(f, val->name);
        fputs("\\n", f);
        put_type(f, g, v);
        fprintf(f, "\"%s];\n", in ? "" : ", color=gray50, fontcolor=gray30");
    }
}

/* Kernels as clusters of their member nodes (nodes carry their kernel index). */
static void put_clusters(FILE *f, IrGraph *g, uint8_t *placed)
{
    for (uint32_t k = 0; k < g->plan->nkernels; k++) {
        const IrKernel *kr = &g->plan->kernels[k];
        fprintf(f, "  subgraph cluster_k%u {\n    label=\"", k);
        put_esc(f, kr->name ? kr->name : "kernel");
        fprintf(f, " (%s)\";\n    style=rounded; color=steelblue;\n",
                plan_kernel_kind_name(kr->kind));
        for (NodeId i = 0; i < g->nnodes; i++)
            if (!g->nodes[i].dead && g->plan->node[i].kernel == k) {
                put_node(f, g, i, "    ");
                placed[i] = 1;
            }
        fputs("  }\n", f);
    }
}

/* An edge from the producer of v (node or source) to node id `to`. */
static void put_edge(FILE *f, IrGraph *g, ValId v, const char *to)
{
    const IrValue *val = ir_val(g, v);
    if (val->def != IR_NONE)
        fprintf(f, "  n%u -> %s", val->def, to);
    else
        fprintf(f, "  v%u -> %s", v, to);
    fputs(" [tooltip=\"", f);
    put_esc(f, val->name);
    fputs("\"];\n", f);
}

void cli_dot_print(IrGraph *g, FILE *f, const char *title)
{
    uint8_t *used = ir_alloc(g, g->nvals + 1);
    uint8_t *placed = ir_alloc(g, g->nnodes + 1);
    for (NodeId i = 0; i < g->nnodes; i++)
        for (int k = 0; !g->nodes[i].dead && k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] != IR_NONE)
                used[g->nodes[i].in[k]] = 1;
    for (uint32_t k = 0; k < g->noutputs; k++)
        used[g->outputs[k]] = 1;
    fputs("digraph \"", f);
    put_esc(f, title ? title : "graph");
    fputs("\" {\n  rankdir=TB;\n  graph [fontname=\"Helvetica\", fontsize=11];\n"
          "  node [fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [color=gray40];\n",
          f);
    put_sources(f, g, used);
    if (g->plan)
        put_clusters(f, g, placed);
    for (NodeId i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead && !placed[i])
            put_node(f, g, i, "  ");
    for (uint32_t k = 0; k < g->noutputs; k++) {
        fprintf(f, "  o%u [shape=ellipse, style=bold, label=\"output ", k);
        put_esc(f, ir_val(g, g->outputs[k])->name);
        fputs("\"];\n", f);
    }
    char to[32];
    for (NodeId i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        snprintf(to, sizeof to, "n%u", i);
        for (int k = 0; !n->dead && k < n->nin; k++)
            if (n->in[k] != IR_NONE)
                put_edge(f, g, n->in[k], to);
    }
    for (uint32_t k = 0; k < g->noutputs; k++) {
        snprintf(to, sizeof to, "o%u", k);
        put_edge(f, g, g->outputs[k], to);
    }
    fputs("}\n", f);
}
