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
#include "dec_index.h"
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
    {"", "MaxPool", 1, DEC_MAX_OPSET, dec_maxpool_indices},
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
    {"", "RNN", 7, DEC_MAX_OPSET, dec_rnn},
    {"", "GRU", 7, DEC_MAX_OPSET, dec_gru},
    {"", "LSTM", 7, DEC_MAX_OPSET, dec_lstm},
    {"", "LinearAttention", 27, DEC_MAX_OPSET, dec_linear_attention},
    {"", "CausalConvWithState", 27, DEC_MAX_OPSET, dec_causal_conv_state},
    {"", "Det", 11, DEC_MAX_OPSET, dec_det},
    {"", "TfIdfVectorizer", 9, DEC_MAX_OPSET, dec_tfidf},
    {"", "MatMulInteger", 10, DEC_MAX_OPSET, dec_matmul_integer},
    {"", "ConvInteger", 10, DEC_MAX_OPSET, dec_conv_integer},
    {"", "QLinearMatMul", 10, DEC_MAX_OPSET, dec_qlinear_matmul},
    {"", "QLinearConv", 10, DEC_MAX_OPSET, dec_qlinear_conv},
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
    {"", "ScatterND", 11, DEC_MAX_OPSET, dec_scatter_nd_any},
    {"", "ScatterElements", 11, DEC_MAX_OPSET, dec_scatter_elements_any},
    {"", "Scatter", 9, 10, dec_scatter_elements_any},
    {"", "TensorScatter", 24, DEC_MAX_OPSET, dec_tensor_scatter},
    {"", "MaxUnpool", 9, DEC_MAX_OPSET, dec_max_unpool},
    {"", "Col2Im", 18, DEC_MAX_OPSET, dec_col2im},
    {"", "GridSample", 16, DEC_MAX_OPSET, dec_grid_sample},
    {"", "AffineGrid", 20, DEC_MAX_OPSET, dec_affine_grid},
    {"", "RoiAlign", 10, DEC_MAX_OPSET, dec_roi_align},
    {"", "DeformConv", 19, DEC_MAX_OPSET, dec_deform_conv},
    {"", "BitCast", 26, DEC_MAX_OPSET, dec_bitcast},
    {"", "ReverseSequence", 10, DEC_MAX_OPSET, dec_reverse_sequence},
    {"", "Expand", 8, DEC_MAX_OPSET, dec_expand_op},
    {"", "Tile", 6, DEC_MAX_OPSET, dec_tile},
    {"", "Pad", 2, DEC_MAX_OPSET, dec_pad_op},
    {"", "DepthToSpace", 1, DEC_MAX_OPSET, dec_depth_to_space},
    {"", "SpaceToDepth", 1, DEC_MAX_OPSET, dec_space_to_depth},
    {"", "CenterCropPad", 18, DEC_MAX_OPSET, dec_center_crop_pad},
    {"", "Resize", 10, DEC_MAX_OPSET, dec_resize},
    {"", "Upsample", 7, 9, dec_resize},
    {"", "NonZero", 9, DEC_MAX_OPSET, dec_nonzero},
    {"", "Unique", 11, DEC_MAX_OPSET, dec_unique},
    {"", "Compress", 9, DEC_MAX_OPSET, dec_compress},
    {"", "NonMaxSuppression", 10, DEC_MAX_OPSET, dec_nms},
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
    {"", "CumProd", 26, DEC_MAX_OPSET, dec_cumprod},
    {"", "TopK", 1, DEC_MAX_OPSET, dec_topk},
    /* signal processing */
    {"", "DFT", 17, DEC_MAX_OPSET, dec_dft},
    {"", "STFT", 17, DEC_MAX_OPSET, dec_stft},
    {"", "HannWindow", 17, DEC_MAX_OPSET, dec_window},
    {"", "HammingWindow", 17, DEC_MAX_OPSET, dec_window},
    {"", "BlackmanWindow", 17, DEC_MAX_OPSET, dec_window},
    {"", "MelWeightMatrix", 17, DEC_MAX_OPSET, dec_mel_weight_matrix},
    /* control flow, sequences, optionals: resolved at compile time */
    {"", "If", 1, DEC_MAX_OPSET, dec_if},
    {"", "Loop", 1, DEC_MAX_OPSET, dec_loop},
    {"", "Scan", 8, DEC_MAX_OPSET, dec_scan},
    {"", "SequenceMap", 17, DEC_MAX_OPSET, dec_sequence_map},
    {"", "SequenceConstruct", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "SequenceEmpty", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "SequenceInsert", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "SequenceErase", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "SequenceAt", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "SequenceLength", 11, DEC_MAX_OPSET, dec_sequence_op},
    {"", "ConcatFromSequence", 11, DEC_MAX_OPSET, dec_concat_from_sequence},
    {"", "SplitToSequence", 11, DEC_MAX_OPSET, dec_split_to_sequence},
    {"", "Optional", 15, DEC_MAX_OPSET, dec_optional_op},
    {"", "OptionalHasElement", 15, DEC_MAX_OPSET, dec_optional_op},
    {"", "OptionalGetElement", 15, DEC_MAX_OPSET, dec_optional_op},
    /* ai.onnx.preview (experimental, unversioned: version 1 only) */
    {"ai.onnx.preview", "FlexAttention", 1, 1, dec_flexattention},
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

/* Whether a and b are the same operator (domain and op type). */
static bool same_op(const IrNode *a, const IrNode *b)
{
    return strcmp(norm_domain(a->foreign.domain), norm_domain(b->foreign.domain)) == 0 &&
           strcmp(a->foreign.op_type ? a->foreign.op_type : "",
                  b->foreign.op_type ? b->foreign.op_type : "") == 0;
}

/* Operators already reported (the first node of each). */
typedef struct {
    const IrNode *first[256];
    int n;
} Reported;

/* Report the unsupported operators of graph `where` and of the bodies (Loop/Scan
 * subgraphs) of its nodes, each operator once, on g. Returns how many were new. If
 * branches are left to their inlining: a branch that a constant condition rules out
 * may hold operators that are never compiled. */
static int report_in(IrGraph *g, IrGraph *where, Reported *r, int depth)
{
    int nbad = 0;
    for (uint32_t i = 0; i < where->nnodes; i++) {
        const IrNode *n = &where->nodes[i];
        if (n->dead || n->op != IR_OP_FOREIGN)
            continue;
        bool seen = dec_lookup(&n->foreign) != NULL;
        for (int k = 0; k < r->n && !seen; k++)
            seen = same_op(r->first[k], n);
        if (!seen) {
            report_one(g, n);
            nbad++;
            if (r->n < (int)(sizeof r->first / sizeof r->first[0]))
                r->first[r->n++] = n;
        }
        bool branches = n->foreign.op_type && strcmp(n->foreign.op_type, "If") == 0;
        for (int k = 0; k < n->nattrs && depth < 64 && !branches; k++)
            if (n->attrs[k].kind == IR_ATTR_GRAPH && n->attrs[k].graph)
                nbad += report_in(g, n->attrs[k].graph, r, depth + 1);
    }
    return nbad;
}

/* Report every unsupported operator once (also inside subgraphs), naming the first
 * node using it. Returns the number of distinct unsupported operators. */
static int report_unsupported(IrGraph *g)
{
    Reported r = {.n = 0};
    return report_in(g, g, &r, 0);
}

/* Whether any input of n is untyped (an earlier node failed): skip it quietly.
 * Sequences and optionals (compile-time lists in seqs) have no tensor type. */
static bool has_untyped_input(IrGraph *g, const IrNode *n, const DecSeqTab *seqs)
{
    for (int i = 0; i < n->nin; i++)
        if (n->in[i] != IR_NONE && ir_vtype(g, n->in[i])->dtype == IR_DT_UNDEF &&
            !dec_seq_known(seqs, n->in[i]))
            return true;
    return false;
}

typedef struct {
    ValId *remap;                          /* old value -> replacement */
    uint32_t nremap;
    uint32_t *uses;
    uint32_t nuses;
    DecSeqTab *seqs;                       /* sequences and optionals (dec_sequence.c) */
    const char **names0;                   /* value names before the pass (nremap) */
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

/* Whether a (declared) and b (computed, data-dependent along axis) agree but there. */
static bool same_but_axis(const IrType *a, const IrType *b, int axis)
{
    if (a->dtype != b->dtype || a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (i != axis && a->dims[i] != b->dims[i])
            return false;
    return true;
}

/* Check that a decomposition agrees with a type the frontend inferred. A result whose
 * extent along one axis is data-dependent (ir_dyn_add) may differ along that axis. */
static bool check_type(IrGraph *g, const IrNode *n, ValId old, ValId nv)
{
    const IrType *a = ir_vtype(g, old), *b = ir_vtype(g, nv);
    const IrDynDim *dd = ir_dyn_find(g, nv);
    if (a->dtype == IR_DT_UNDEF || b->dtype == IR_DT_UNDEF || ir_type_eq(a, b) ||
        (dd && same_but_axis(a, b, dd->axis)))
        return true;
    char sa[160], sb[160];
    ir_error(g, &n->origin, "output '%s' computes to %s but the model declares %s",
             g->vals[old].name, type_str(b, sb, sizeof sb), type_str(a, sa, sizeof sa));
    return false;
}

/* Run the handler of c->n; c->out receives its results. Used for the graph's own
 * nodes and, by dec_control.c, for the nodes of inlined subgraphs. */
bool dec_run(DecCtx *c)
{
    IrGraph *g = c->g;
    const IrNode *n = c->n;
    const DecEntry *e = dec_lookup(&n->foreign);
    if (!e) {
        report_one(g, n);
        return false;
    }
    if (n->nout > DEC_MAX_OUT) {
        ir_error(g, &n->origin, "too many outputs (%d)", n->nout);
        return false;
    }
    for (int i = 0; i < DEC_MAX_OUT; i++)
        c->out[i] = IR_NONE;
    if (!dec_seq_check_inputs(c))
        return false;
    int nerr = g->diag ? g->diag->nerrors : 0;
    uint32_t first = g->nnodes;
    ValId first_val = g->nvals;
    bool ok = e->fn(c) && !(g->diag && g->diag->nerrors > nerr);
    if (ok)
        pass_halfwiden_group(g, first, first_val, c->out, n->nout);
    return ok && !(g->diag && g->diag->nerrors > nerr);
}

/* Decompose one foreign node; false if it failed (errors already reported).
 * in_names: the names its inputs had before the pass (for captured values). */
static bool decompose_node(IrGraph *g, DecState *s, const IrNode *n,
                           const char *const *in_names)
{
    DecCtx c = {.g = g, .n = n, .o = &n->origin, .opset = n->foreign.opset,
                .uses = s->uses, .nuses = s->nuses, .seqs = s->seqs, .outg = g,
                .in_names = in_names};
    uint32_t first_new = g->nvals;
    if (!dec_run(&c))
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

/* The names the inputs of n had before the pass, when n holds a subgraph (whose
 * captured inputs are named like the values they capture); NULL otherwise. */
static const char *const *input_names(IrGraph *g, const DecState *s, const IrNode *n)
{
    bool sub = false;
    for (int k = 0; k < n->nattrs; k++)
        sub |= n->attrs[k].kind == IR_ATTR_GRAPH;
    if (!sub)
        return NULL;
    const char **nm = ir_scratch(g, ((size_t)n->nin + 1) * sizeof *nm);
    for (int k = 0; k < n->nin; k++)
        nm[k] = n->in[k] == IR_NONE ? "" : n->in[k] < s->nremap ? s->names0[n->in[k]]
                                                                : g->vals[n->in[k]].name;
    return nm;
}

/* Walk the detached node list: re-add core nodes, decompose foreign ones. */
static bool decompose_all(IrGraph *g, DecState *s, IrNode *old, uint32_t nold)
{
    bool ok = true;
    for (uint32_t i = 0; i < nold; i++) {
        IrNode *n = &old[i];
        if (n->dead)
            continue;
        const char *const *in_names = input_names(g, s, n);
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] != IR_NONE && n->in[k] < s->nremap)
                n->in[k] = s->remap[n->in[k]];
        if (has_untyped_input(g, n, s->seqs)) {
            ok = false; /* an earlier node failed and has been reported */
            continue;
        }
        if (n->op != IR_OP_FOREIGN) {
            ir_readd_node(g, n);
            continue;
        }
        if (!decompose_node(g, s, n, in_names))
            ok = false;
    }
    return ok;
}

/* The pass: foreign ops -> core ops. */
bool pass_decompose(IrGraph *g, const PassOptions *opt)
{
    if (report_unsupported(g) > 0)
        return false;
    (void)opt;
    bool fold = g->fold_consts;
    g->fold_consts = true;

    DecState s = {0};
    s.uses = ir_use_counts(g);
    s.nuses = g->nvals;
    s.nremap = g->nvals;
    s.remap = ir_scratch(g, sizeof(ValId) * (s.nremap ? s.nremap : 1));
    s.seqs = dec_seq_new(g);
    s.names0 = ir_scratch(g, sizeof(char *) * (s.nremap ? s.nremap : 1));
    for (uint32_t v = 0; v < s.nremap; v++) {
        s.remap[v] = v;
        s.names0[v] = g->vals[v].name;
    }

    uint32_t nold = 0;
    IrNode *old = ir_rewrite_begin(g, &nold);
    bool ok = decompose_all(g, &s, old, nold);
    fix_outputs(g, &s);
    ok &= dec_seq_expand_outputs(g, s.seqs);
    g->fold_consts = fold;
    return ok && !ir_failed(g);
}
