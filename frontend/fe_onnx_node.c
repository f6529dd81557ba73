/* fe_onnx_node.c: one ONNX node -> a FOREIGN IR node, a constant (Constant), or an
 * inlined model-local function call. Nodes of the default domain and of the other
 * standard operator domains in op_domains (the decomposition decides which of their
 * operators it supports) become FOREIGN nodes; unknown domains are refused here. */
#include <stdio.h>
#include <string.h>

#include "fe_onnx.h"

/* Bind every output of a node that failed to IR_NONE, so that its users do not
 * report the same problem again. */
static void fail_outputs(FeScope *s, const Onnx__NodeProto *n)
{
    for (size_t j = 0; j < n->n_output; j++)
        if (n->output[j][0] && !fe_map_get(&s->vals, n->output[j], NULL))
            fe_define(s, n->output[j], IR_NONE);
}

/* Whether any model-local function lives in domain. */
static bool is_function_domain(const FeOnnx *cx, const char *domain)
{
    for (size_t i = 0; i < cx->model->n_functions; i++)
        if (!strcmp(fe_onnx_domain(cx->model->functions[i]->domain), domain))
            return true;
    return false;
}

/* Standard operator domains besides the default one whose nodes are handed to the
 * decomposition (which reports the operators it does not know). */
static const char *const op_domains[] = {"ai.onnx.preview", "com.microsoft", "ai.onnx.ml"};

/* Whether dom is one of op_domains. */
static bool is_op_domain(const char *dom)
{
    for (size_t i = 0; i < sizeof op_domains / sizeof op_domains[0]; i++)
        if (!strcmp(dom, op_domains[i]))
            return true;
    return false;
}

/* An operator of the default domain ("") or of an op_domains entry: a FOREIGN node
 * with the version of its domain in effect (ai.onnx: the scope's; others: the
 * model's import). The values its subgraphs capture are appended to its inputs. */
static void foreign_node(FeScope *s, const Onnx__NodeProto *n, const char *dom,
                         const IrOrigin *o)
{
    FeOnnx *cx = s->cx;
    IrGraph *g = s->g;
    int64_t opset = dom[0] ? fe_onnx_find_opset(cx->model->opset_import,
                                                cx->model->n_opset_import, dom)
                           : s->opset;
    bool ok = opset > 0;
    if (!ok && dom[0]) {
        ir_error(g, o, "the model imports no opset for domain '%s'", dom);
    } else if (!ok && !cx->warned_no_opset) {
        ir_error(g, o, "the model imports no opset for the default domain (ai.onnx)");
        cx->warned_no_opset = true;
    }
    ValId *in = ir_alloc(g, (n->n_input + 1) * sizeof *in);
    for (size_t i = 0; i < n->n_input; i++)
        ok &= fe_node_input(s, n->input[i], o, &in[i]);
    s->nsink = 0;
    IrAttr *attrs = NULL;
    int na = 0;
    ok &= fe_attrs(s, n, o, &attrs, &na);
    fe_sink_unique(s);
    size_t total = n->n_input + s->nsink;
    if (ok && total > UINT16_MAX) {
        ir_error(g, o, "too many inputs (%zu)", total);
        ok = false;
    }
    if (!ok) {
        fail_outputs(s, n);
        return;
    }
    ValId *all = in;
    if (s->nsink) {
        all = ir_alloc(g, total * sizeof *all);
        memcpy(all, in, n->n_input * sizeof *all);
        memcpy(all + n->n_input, s->sink, s->nsink * sizeof *all);
    }
    fe_emit_foreign(s, n->op_type, dom, opset, all, (int)total, (const char *const *)n->output,
                    (int)n->n_output, attrs, na, o);
}

/* Convert node n (index in its body) in scope s. */
void fe_node(FeScope *s, const Onnx__NodeProto *n, size_t index)
{
    FeOnnx *cx = s->cx;
    IrGraph *g = s->g;
    const char *op = n->op_type ? n->op_type : "";
    const char *prefix = s->call ? s->call->prefix : "";
    char buf[800];
    if (n->name && n->name[0])
        snprintf(buf, sizeof buf, "%.300s%.400s", prefix, n->name);
    else
        snprintf(buf, sizeof buf, "%.300s%.300s_%zu", prefix, op[0] ? op : "node", index);
    IrOrigin o = {ir_strdup(g, buf), ir_strdup(g, op), NULL};
    if (!op[0]) {
        ir_error(g, &o, "node has no op_type");
        fail_outputs(s, n);
        return;
    }
    if (n->n_input > UINT16_MAX || n->n_output > UINT16_MAX || n->n_attribute > UINT16_MAX) {
        ir_error(g, &o, "too many inputs, outputs or attributes");
        fail_outputs(s, n);
        return;
    }
    const char *dom = fe_onnx_domain(n->domain);
    int fn = fe_onnx_function(cx, dom, op);
    if (fn >= 0)
        fe_inline_call(s, n, fn, &o);
    else if (!dom[0] && !strcmp(op, "Constant"))
        fe_constant(s, n, &o);
    else if (!dom[0] || is_op_domain(dom))
        foreign_node(s, n, dom, &o);
    else {
        if (is_function_domain(cx, dom))
            ir_error(g, &o, "unknown function '%s' in domain '%s'", op, dom);
        else
            ir_error(g, &o, "unknown domain '%s' (supported: the default ONNX domain, "
                     "ai.onnx.preview, com.microsoft, ai.onnx.ml and the model's own functions)", dom);
        fail_outputs(s, n);
    }
}
