/* decompose.c: pass_decompose, lowering of FOREIGN (frontend) nodes to core ops.
 *
 * Every foreign node is looked up by (domain, op_type) in the one table below and
 * handed to its handler (dec_*.c). Unsupported operators are all reported at once
 * before anything is rewritten: one error per distinct operator, naming the first
 * node that uses it. Nodes are processed in topological order, so a handler always
 * sees typed core values as inputs, and constant folding (g->fold_consts) turns
 * shape subgraphs into constants before the nodes that need them.
 */
#include <stdio.h>
#include <string.h>

#include "dec.h"
#include "dec_aten.h"
#include "pass.h"

#define DEC_MAX_OPSET 28                   /* newest default-domain opset we accept */

typedef struct {
    const char *domain;                    /* "" = ai.onnx */
    const char *op_type;                   /* NULL: any op the domain's handler knows */
    int min_opset, max_opset;              /* versions of the domain we handle */
    DecFn fn;
} DecEntry;

/* The one dispatch table. "ai.onnx" is normalised to "" before lookup. */
static const DecEntry dec_table[] = {
    /* elementwise unary */
    {"", "Abs", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Neg", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Exp", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Log", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Sqrt", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Reciprocal", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Tanh", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Erf", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Sigmoid", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Relu", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Floor", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Ceil", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "Round", 11, DEC_MAX_OPSET, dec_unary_op},
    {"", "Sin", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Cos", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Tan", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Asin", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Acos", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Atan", 7, DEC_MAX_OPSET, dec_unary_op},
    {"", "Sinh", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Cosh", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Asinh", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Acosh", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Atanh", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Sign", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Not", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "BitwiseNot", 18, DEC_MAX_OPSET, dec_unary_op},
    {"", "IsNaN", 9, DEC_MAX_OPSET, dec_unary_op},
    {"", "Softplus", 1, DEC_MAX_OPSET, dec_unary_op},
    {"", "IsInf", 10, DEC_MAX_OPSET, dec_isinf},
    /* elementwise binary and variadic */
    {"", "Add", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Sub", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Mul", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Div", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Pow", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Equal", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Less", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "LessOrEqual", 12, DEC_MAX_OPSET, dec_binary_op},
    {"", "Greater", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "GreaterOrEqual", 12, DEC_MAX_OPSET, dec_binary_op},
    {"", "And", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Or", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "Xor", 1, DEC_MAX_OPSET, dec_binary_op},
    {"", "BitwiseAnd", 18, DEC_MAX_OPSET, dec_binary_op},
    {"", "BitwiseOr", 18, DEC_MAX_OPSET, dec_binary_op},
    {"", "BitwiseXor", 18, DEC_MAX_OPSET, dec_binary_op},
    {"", "Mod", 10, DEC_MAX_OPSET, dec_mod},
    {"", "BitShift", 11, DEC_MAX_OPSET, dec_bitshift},
    {"", "Sum", 1, DEC_MAX_OPSET, dec_variadic},
    {"", "Mean", 1, DEC_MAX_OPSET, dec_variadic},
    {"", "Max", 1, DEC_MAX_OPSET, dec_variadic},
    {"", "Min", 1, DEC_MAX_OPSET, dec_variadic},
    {"", "Where", 1, DEC_MAX_OPSET, dec_where},
    /* casts, identities, activations */
    {"", "Cast", 6, DEC_MAX_OPSET, dec_cast_op},
    {"", "CastLike", 15, DEC_MAX_OPSET, dec_castlike},
    {"", "Identity", 1, DEC_MAX_OPSET, dec_identity},
    {"", "Dropout", 1, DEC_MAX_OPSET, dec_dropout},
    {"", "Clip", 1, DEC_MAX_OPSET, dec_clip},
    {"", "LeakyRelu", 1, DEC_MAX_OPSET, dec_activation},
    {"", "Elu", 1, DEC_MAX_OPSET, dec_activation},
    {"", "Selu", 1, DEC_MAX_OPSET, dec_activation},
    {"", "Celu", 12, DEC_MAX_OPSET, dec_activation},
    {"", "HardSigmoid", 1, DEC_MAX_OPSET, dec_activation},
    {"", "HardSwish", 14, DEC_MAX_OPSET, dec_activation},
    {"", "Softsign", 1, DEC_MAX_OPSET, dec_activation},
    {"", "Mish", 18, DEC_MAX_OPSET, dec_activation},
    {"", "ThresholdedRelu", 10, DEC_MAX_OPSET, dec_activation},
    {"", "Swish", 24, DEC_MAX_OPSET, dec_activation},
    {"", "SwiGLU", 28, DEC_MAX_OPSET, dec_activation},
    {"", "Shrink", 9, DEC_MAX_OPSET, dec_activation},
    {"", "PRelu", 1, DEC_MAX_OPSET, dec_prelu},
    {"", "Gelu", 20, DEC_MAX_OPSET, dec_gelu},
    /* constants */
    {"", "Constant", 1, DEC_MAX_OPSET, dec_constant},
    {"", "ConstantOfShape", 9, DEC_MAX_OPSET, dec_constant_of_shape},
    {"", "Range", 11, DEC_MAX_OPSET, dec_range},
    {"", "EyeLike", 9, DEC_MAX_OPSET, dec_eyelike},
    {"", "Trilu", 14, DEC_MAX_OPSET, dec_trilu},
    {"", "OneHot", 9, DEC_MAX_OPSET, dec_onehot},
    /* neural network */
    {"", "Conv", 1, DEC_MAX_OPSET, dec_conv},
    {"", "ConvTranspose", 1, DEC_MAX_OPSET, dec_conv_transpose},
    {"", "MaxPool", 1, DEC_MAX_OPSET, dec_pool},
    {"", "AveragePool", 1, DEC_MAX_OPSET, dec_pool},
    {"", "LpPool", 2, DEC_MAX_OPSET, dec_pool},
    {"", "GlobalAveragePool", 1, DEC_MAX_OPSET, dec_global_pool},
    {"", "GlobalMaxPool", 1, DEC_MAX_OPSET, dec_global_pool},
    {"", "GlobalLpPool", 2, DEC_MAX_OPSET, dec_global_pool},
    {"", "BatchNormalization", 6, DEC_MAX_OPSET, dec_batchnorm},
    {"", "InstanceNormalization", 6, DEC_MAX_OPSET, dec_instancenorm},
    {"", "LayerNormalization", 17, DEC_MAX_OPSET, dec_layernorm},
    {"", "GroupNormalization", 18, DEC_MAX_OPSET, dec_groupnorm},
    {"", "RMSNormalization", 23, DEC_MAX_OPSET, dec_rmsnorm},
    {"", "LpNormalization", 1, DEC_MAX_OPSET, dec_lpnorm},
    {"", "MeanVarianceNormalization", 9, DEC_MAX_OPSET, dec_mvn},
    {"", "LRN", 1, DEC_MAX_OPSET, dec_lrn},
    {"", "NegativeLogLikelihoodLoss", 12, DEC_MAX_OPSET, dec_nll_loss},
    {"", "SoftmaxCrossEntropyLoss", 12, DEC_MAX_OPSET, dec_sce_loss},
    {"", "Attention", 23, DEC_MAX_OPSET, dec_attention},
    {"", "RotaryEmbedding", 23, DEC_MAX_OPSET, dec_rotary},
    {"", "QuantizeLinear", 10, DEC_MAX_OPSET, dec_quantize},
    {"", "DequantizeLinear", 10, DEC_MAX_OPSET, dec_dequantize},
    {"", "DynamicQuantizeLinear", 11, DEC_MAX_OPSET, dec_dynamic_quantize},
    {"", "Gemm", 1, DEC_MAX_OPSET, dec_gemm},
    {"", "MatMul", 1, DEC_MAX_OPSET, dec_matmul},
    {"", "Einsum", 12, DEC_MAX_OPSET, dec_einsum},
    /* shapes and data movement */
    {"", "Reshape", 1, DEC_MAX_OPSET, dec_reshape_op},
    {"", "Shape", 1, DEC_MAX_OPSET, dec_shape_op},
    {"", "Size", 1, DEC_MAX_OPSET, dec_size_op},
    {"", "Transpose", 1, DEC_MAX_OPSET, dec_transpose_op},
    {"", "Squeeze", 1, DEC_MAX_OPSET, dec_squeeze},
    {"", "Unsqueeze", 1, DEC_MAX_OPSET, dec_unsqueeze},
    {"", "Flatten", 1, DEC_MAX_OPSET, dec_flatten},
    {"", "Concat", 1, DEC_MAX_OPSET, dec_concat_op},
    {"", "Split", 1, DEC_MAX_OPSET, dec_split},
    {"", "Slice", 1, DEC_MAX_OPSET, dec_slice_op},
    {"", "Gather", 1, DEC_MAX_OPSET, dec_gather_op},
    {"", "GatherElements", 11, DEC_MAX_OPSET, dec_gather_elements},
    {"", "GatherND", 11, DEC_MAX_OPSET, dec_gather_nd},
    {"", "ScatterND", 11, DEC_MAX_OPSET, dec_scatter_nd},
    {"", "ScatterElements", 11, DEC_MAX_OPSET, dec_scatter_elements},
    {"", "Expand", 8, DEC_MAX_OPSET, dec_expand_op},
    {"", "Tile", 6, DEC_MAX_OPSET, dec_tile},
    {"", "Pad", 2, DEC_MAX_OPSET, dec_pad_op},
    {"", "DepthToSpace", 1, DEC_MAX_OPSET, dec_depth_to_space},
    {"", "SpaceToDepth", 1, DEC_MAX_OPSET, dec_space_to_depth},
    {"", "CenterCropPad", 18, DEC_MAX_OPSET, dec_center_crop_pad},
    {"", "Resize", 10, DEC_MAX_OPSET, dec_resize},
    {"", "Upsample", 7, 9, dec_resize},
    {"", "NonZero", 9, DEC_MAX_OPSET, dec_data_dependent},
    {"", "Unique", 11, DEC_MAX_OPSET, dec_data_dependent},
    {"", "Compress", 9, DEC_MAX_OPSET, dec_data_dependent},
    {"", "NonMaxSuppression", 10, DEC_MAX_OPSET, dec_data_dependent},
    /* reductions */
    {"", "ReduceSum", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceMean", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceMax", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceMin", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceProd", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceL1", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceL2", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceLogSum", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceLogSumExp", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "ReduceSumSquare", 1, DEC_MAX_OPSET, dec_reduce_op},
    {"", "Softmax", 1, DEC_MAX_OPSET, dec_softmax},
    {"", "LogSoftmax", 1, DEC_MAX_OPSET, dec_softmax},
    {"", "Hardmax", 1, DEC_MAX_OPSET, dec_softmax},
    {"", "ArgMax", 1, DEC_MAX_OPSET, dec_argminmax},
    {"", "ArgMin", 1, DEC_MAX_OPSET, dec_argminmax},
    {"", "CumSum", 11, DEC_MAX_OPSET, dec_cumsum},
    /* torch.export ATen ops: dispatched by dec_aten on the op name (dec_aten.c) */
    {"aten", NULL, 0, INT32_MAX, dec_aten},
};

#define DEC_TABLE_LEN ((int)(sizeof dec_table / sizeof dec_table[0]))

/* Domain as used in the table: "ai.onnx" and NULL mean "". */
static const char *norm_domain(const char *d)
{
    return (!d || strcmp(d, "ai.onnx") == 0) ? "" : d;
}

/* Table entry for a foreign node, or NULL. */
static const DecEntry *dec_lookup(const IrForeign *f)
{
    const char *dom = norm_domain(f->domain);
    if (!f->op_type)
        return NULL;
    for (int i = 0; i < DEC_TABLE_LEN; i++) {
        const DecEntry *e = &dec_table[i];
        if (strcmp(e->domain, dom) != 0 || f->opset < e->min_opset || f->opset > e->max_opset)
            continue;
        if (e->op_type == NULL) {
            if (strcmp(dom, "aten") == 0 && dec_aten_find(f->op_type))
                return e;
        } else if (strcmp(e->op_type, f->op_type) == 0) {
            return e;
        }
    }
    return NULL;
}

/* Report "unsupported operator NAME (opset N)" for node n; the domain prefixes the
 * name unless the op type already carries it ("aten.relu.default"). */
static void report_one(IrGraph *g, const IrNode *n)
{
    const char *dom = norm_domain(n->foreign.domain);
    const char *op = n->foreign.op_type ? n->foreign.op_type : "?";
    size_t dl = strlen(dom);
    bool prefixed = dl == 0 || (strncmp(op, dom, dl) == 0 && op[dl] == '.');
    char ver[40] = "";
    if (n->foreign.opset > 0)
        snprintf(ver, sizeof ver, " (opset %lld)", (long long)n->foreign.opset);
    ir_error(g, &n->origin, "unsupported operator %s%s%s%s", prefixed ? "" : dom,
             prefixed ? "" : ".", op, ver);
}

/* Report every unsupported operator once, naming the first node using it.
 * Returns the number of distinct unsupported operators. */
static int report_unsupported(IrGraph *g)
{
    int nbad = 0;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const IrNode *n = &g->nodes[i];
        if (n->dead || n->op != IR_OP_FOREIGN || dec_lookup(&n->foreign))
            continue;
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++) {
            const IrNode *m = &g->nodes[j];
            seen = !m->dead && m->op == IR_OP_FOREIGN &&
                   strcmp(norm_domain(m->foreign.domain), norm_domain(n->foreign.domain)) == 0 &&
                   strcmp(m->foreign.op_type ? m->foreign.op_type : "",
                          n->foreign.op_type ? n->foreign.op_type : "") == 0;
        }
        if (seen)
            continue;
        report_one(g, n);
        nbad++;
    }
    return nbad;
}

/* Whether any input of n is untyped (an earlier node failed): skip it quietly. */
static bool has_untyped_input(IrGraph *g, const IrNode *n)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] != IR_NONE && ir_vtype(g, n->in[i])->dtype == IR_DT_UNDEF)
            return true;
    return false;
}

typedef struct {
    ValId *remap;                          /* old value -> replacement */
    uint32_t nremap;
    uint32_t *uses;
    uint32_t nuses;
} DecState;

/* Whether v is a graph output. */
static bool is_output(const IrGraph *g, ValId v)
{
    for (uint32_t i = 0; i < g->noutputs; i++)
        if (g->outputs[i] == v)
            return true;
    return false;
}

/* Bind the old output value `old` to the new value `nv` made for it. A value made
 * by this handler takes over the old value's name, so dumps keep the model's names
 * (graph outputs are renamed by fix_outputs). */
static void bind_output(IrGraph *g, DecState *s, ValId old, ValId nv, uint32_t first_new)
{
    s->remap[old] = nv;
    if (nv >= first_new && nv != old && !is_output(g, old)) {
        const char *oname = g->vals[old].name, *nname = g->vals[nv].name;
        ir_set_name(g, old, "");
        ir_set_name(g, nv, oname);
        ir_set_name(g, old, nname);
    }
}

/* "f32[1,2,3]" into buf. */
static const char *type_str(const IrType *t, char *buf, size_t len)
{
    size_t k = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && k < len; i++)
        k += (size_t)snprintf(buf + k, len - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < len)
        snprintf(buf + k, len - k, "]");
    return buf;
}

/* Check that a decomposition agrees with a type the frontend inferred. */
static bool check_type(IrGraph *g, const IrNode *n, ValId old, ValId nv)
{
    const IrType *a = ir_vtype(g, old), *b = ir_vtype(g, nv);
    if (a->dtype == IR_DT_UNDEF || b->dtype == IR_DT_UNDEF || ir_type_eq(a, b))
        return true;
    char sa[160], sb[160];
    ir_error(g, &n->origin, "output '%s' computes to %s but the model declares %s",
             g->vals[old].name, type_str(b, sb, sizeof sb), type_str(a, sa, sizeof sa));
    return false;
}

/* Decompose one foreign node; false if it failed (errors already reported). */
static bool decompose_node(IrGraph *g, DecState *s, const IrNode *n)
{
    const DecEntry *e = dec_lookup(&n->foreign);
    IR_ASSERT(e != NULL);
    if (n->nout > DEC_MAX_OUT) {
        ir_error(g, &n->origin, "too many outputs (%d)", n->nout);
        return false;
    }
    DecCtx c = {.g = g, .n = n, .o = &n->origin, .opset = n->foreign.opset,
                .uses = s->uses, .nuses = s->nuses};
    for (int i = 0; i < DEC_MAX_OUT; i++)
        c.out[i] = IR_NONE;
    int nerr = g->diag ? g->diag->nerrors : 0;
    uint32_t first_new = g->nvals;
    bool ok = e->fn(&c);
    if (!ok || (g->diag && g->diag->nerrors > nerr))
        return false;
    for (int i = 0; i < n->nout; i++) {
        ValId old = n->out[i];
        if (old == IR_NONE)
            continue;
        if (c.out[i] == IR_NONE) {
            if (dec_out_used(&c, i)) {
                ir_error(g, &n->origin, "unsupported: output %d ('%s') of %s", i,
                         g->vals[old].name, n->foreign.op_type);
                return false;
            }
            continue;
        }
        if (!check_type(g, n, old, c.out[i]))
            return false;
        bind_output(g, s, old, c.out[i], first_new);
    }
    return true;
}

/* Point graph outputs at their replacements; ir_replace_uses gives the
 * replacement the output's name when it is an internal value. */
static void fix_outputs(IrGraph *g, DecState *s)
{
    for (uint32_t i = 0; i < g->noutputs; i++) {
        ValId v = g->outputs[i];
        if (v < s->nremap && s->remap[v] != v)
            ir_replace_uses(g, v, s->remap[v]);
    }
}

/* Walk the detached node list: re-add core nodes, decompose foreign ones. */
static bool decompose_all(IrGraph *g, DecState *s, IrNode *old, uint32_t nold)
{
    bool ok = true;
    for (uint32_t i = 0; i < nold; i++) {
        IrNode *n = &old[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] != IR_NONE && n->in[k] < s->nremap)
                n->in[k] = s->remap[n->in[k]];
        if (has_untyped_input(g, n)) {
            ok = false; /* an earlier node failed and has been reported */
            continue;
        }
        if (n->op != IR_OP_FOREIGN) {
            ir_readd_node(g, n);
            continue;
        }
        if (!decompose_node(g, s, n))
            ok = false;
    }
    return ok;
}

/* The pass: foreign ops -> core ops. */
bool pass_decompose(IrGraph *g, const PassOptions *opt)
{
    if (report_unsupported(g) > 0)
        return false;
    bool fold = g->fold_consts;
    size_t budget = g->fold_budget;
    g->fold_consts = true;
    g->fold_budget = (opt && opt->fold_budget) ? opt->fold_budget : (size_t)64 << 20;

    DecState s = {0};
    s.uses = ir_use_counts(g);
    s.nuses = g->nvals;
    s.nremap = g->nvals;
    s.remap = ir_alloc(g, sizeof(ValId) * (s.nremap ? s.nremap : 1));
    for (uint32_t v = 0; v < s.nremap; v++)
        s.remap[v] = v;

    uint32_t nold = 0;
    IrNode *old = ir_rewrite_begin(g, &nold);
    bool ok = decompose_all(g, &s, old, nold);
    fix_outputs(g, &s);
    g->fold_consts = fold;
    g->fold_budget = budget;
    return ok && !ir_failed(g);
}
