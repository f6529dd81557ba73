/* dec.h: private interface of the decomposition pass (passes/decompose.c, dec_*.c).
 *
 * pass_decompose walks the graph in topological order and hands every FOREIGN node
 * to the handler registered for its (domain, op_type) in the one table of
 * decompose.c. A handler reads its inputs (already core values with known types),
 * builds core nodes with the ir_* builders or dec_op(), and stores one value per
 * output in c->out[]. Constant inputs fold while building (g->fold_consts is set),
 * so shape subgraphs turn into constants before the node that needs them.
 * Handlers report user errors with dec_err() (which names the node) and return
 * false.
 */
#ifndef SPYREC_DEC_H
#define SPYREC_DEC_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"

#define DEC_MAX_OUT 64                    /* most outputs one foreign node may have */

typedef struct {
    IrGraph *g;
    const IrNode *n;                      /* the foreign node; inputs already remapped */
    const IrOrigin *o;                    /* its origin: given to new nodes and errors */
    int64_t opset;                        /* imported version of the node's domain */
    const uint32_t *uses;                 /* use counts of the values before the pass */
    uint32_t nuses;                       /* entries in uses */
    ValId out[DEC_MAX_OUT];               /* results, one per output (IR_NONE: not made) */
    struct DecSeqTab *seqs;               /* compile-time sequences/optionals (dec_sequence.c) */
    IrGraph *outg;                        /* graph of n->out and uses[] (NULL: g); a subgraph
                                             while its body is being inlined */
    const char *const *in_names;          /* names n->in had at import (NULL: current names);
                                             binds the values subgraphs capture */
} DecCtx;

typedef bool (*DecFn)(DecCtx *c);

/* halfwiden.c: after a handler built nodes [first, g->nnodes) (values from
 * first_val on), make them compute in float32 when they work on float16/bfloat16
 * values; out[nout] (the handler's results) are replaced by their values rounded
 * back to the declared half dtypes. */
void pass_halfwiden_group(IrGraph *g, uint32_t first, ValId first_val, ValId *out, int nout);

/* ---- dec_util.c: helpers shared by the handlers ---- */
void dec_err(DecCtx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
ValId dec_in(const DecCtx *c, int i);     /* input i, IR_NONE if absent or omitted */
const IrType *dec_ty(const DecCtx *c, ValId v);
bool dec_out_used(const DecCtx *c, int i);/* is output i consumed or a graph output */
int64_t dec_ai(const DecCtx *c, const char *name, int64_t dflt);
double dec_af(const DecCtx *c, const char *name, double dflt);
const char *dec_as(const DecCtx *c, const char *name, const char *dflt);
int dec_aints(const DecCtx *c, const char *name, const int64_t **out); /* -1 if absent */
bool dec_has_attr(const DecCtx *c, const char *name);
bool dec_max_outputs(DecCtx *c, int n);   /* reports a node with more than n outputs */

bool dec_fits(DecCtx *c, int64_t n, size_t es, const char *what);
/* Normalise axis a (may be negative) for rank r; reports and returns false if out of range. */
bool dec_axis(DecCtx *c, int64_t a, int r, int *out);
/* "unsupported: dynamic WHAT input 'name'" error for a non-constant input x. */
void dec_dynamic_err(DecCtx *c, ValId x, const char *what);
/* Constant integer tensor (rank <= 1) into v[max]; *n gets the count. Reports
 * "unsupported: dynamic WHAT input" when x is not a constant. */
bool dec_const_ints(DecCtx *c, ValId x, const char *what, int64_t *v, int max, int *n);
/* Same for a float tensor (any float dtype). */
bool dec_const_floats(DecCtx *c, ValId x, const char *what, double *v, int max, int *n);
/* First element of a constant tensor as double; reports when not constant. */
bool dec_const_scalar(DecCtx *c, ValId x, const char *what, double *v);

/* Element access on host buffers of any numeric dtype. */
double dec_load(IrDType t, const void *p, int64_t i);
int64_t dec_load_int(IrDType t, const void *p, int64_t i);
void dec_store(IrDType t, void *p, int64_t i, double v);

/* Constants. */
ValId dec_scalar(IrGraph *g, IrDType t, double v);      /* rank-0 constant */
ValId dec_const(IrGraph *g, IrDType t, const int64_t *dims, int rank, const double *v);
ValId dec_const_i64(IrGraph *g, const int64_t *dims, int rank, const int64_t *v);
ValId dec_const_f32(IrGraph *g, const int64_t *dims, int rank, const float *v);

/* Builders for core ops without a convenience builder in ir.h; return output 0. */
ValId dec_op(DecCtx *c, IrOp op, const ValId *in, int nin, const IrAttr *a, int na);
ValId dec_slice(DecCtx *c, ValId x, const int64_t *starts, const int64_t *steps,
                const int64_t *sizes);
ValId dec_slice_axis(DecCtx *c, ValId x, int axis, int64_t start, int64_t step, int64_t size);
ValId dec_pad(DecCtx *c, ValId x, const int64_t *pads, const int64_t *interior, double value);
ValId dec_concat(DecCtx *c, const ValId *xs, int n, int axis);
ValId dec_gather(DecCtx *c, ValId data, ValId idx, int axis);
ValId dec_reshape(DecCtx *c, ValId x, const int64_t *dims, int rank); /* no-op if same */
ValId dec_transpose(DecCtx *c, ValId x, const int64_t *perm);         /* no-op if identity */
ValId dec_expand(DecCtx *c, ValId x, const int64_t *dims, int rank);  /* no-op if same */
ValId dec_cast(DecCtx *c, ValId x, IrDType t);                         /* no-op if same */
ValId dec_reduce(DecCtx *c, int fn, ValId x, const int64_t *axes, int naxes, bool keep);
ValId dec_mean(DecCtx *c, ValId x, const int64_t *axes, int naxes, bool keep);
ValId dec_un(DecCtx *c, int fn, ValId a);
ValId dec_bin(DecCtx *c, int fn, ValId a, ValId b);
ValId dec_bin_s(DecCtx *c, int fn, ValId a, double s); /* a FN scalar of a's dtype */
ValId dec_select(DecCtx *c, ValId cond, ValId a, ValId b);
ValId dec_chan_view(DecCtx *c, ValId v, int r);
ValId dec_take_along(DecCtx *c, ValId data, ValId idx, int axis); /* dec_gather.c */       /* v[C] -> [1, C, 1, ...] of rank r */

/* Numpy broadcast of two shapes; false if incompatible. */
bool dec_broadcast(const IrType *a, const IrType *b, int64_t *dims, int *rank);
int64_t dec_numel(const IrType *t);

/* ---- decompose.c: recursive use of the dispatch table (control flow) ---- */
/* Run the handler registered for foreign node c->n (inputs are values of c->g) and
 * leave its results in c->out; reports an unknown operator. The caller fills c. */
bool dec_run(DecCtx *c);

/* ---- dec_sequence.c: sequences and optionals resolved at compile time ---- */
typedef struct DecSeqTab DecSeqTab;
DecSeqTab *dec_seq_new(IrGraph *g);       /* empty table in g's scratch arena */
/* Whether v stands for a sequence or an optional (no tensor type of its own). */
bool dec_seq_known(const DecSeqTab *t, ValId v);
/* Elements of sequence v; false if v is not a sequence (an empty optional). */
bool dec_seq_items(const DecSeqTab *t, ValId v, const ValId **items, uint32_t *n);
/* A new value standing for the sequence items[0..n) of elem (IR_DT_UNDEF: from items). */
ValId dec_seq_make(DecCtx *c, const ValId *items, uint32_t n, IrDType elem);
ValId dec_optional_none(DecCtx *c);       /* a new empty optional */
/* Report an input of c->n that is a sequence/optional when the op takes none. */
bool dec_seq_check_inputs(DecCtx *c);
/* Replace every graph output that is a sequence or an optional by one output per
 * element, "NAME[i]" (none for an empty one); hidden outputs stay last. */
bool dec_seq_expand_outputs(IrGraph *g, const DecSeqTab *t);
/* Whether a and b differ in structure: one is a sequence or an optional and the other
 * is not, one is an empty optional, or they hold different numbers of tensors. */
bool dec_seq_len_differs(const DecSeqTab *t, ValId a, ValId b);
/* Charge one inlined body to the pass-wide unrolling budget (limit bodies in all; the
 * table is the pass's state of compile-time control flow); false once it is spent. */
bool dec_seq_charge(DecSeqTab *t, uint64_t limit);

/* ---- handlers (one per ONNX op or family) ---- */
/* dec_elementwise.c */
bool dec_unary_op(DecCtx *c);             /* op_type -> UNARY fn */
bool dec_binary_op(DecCtx *c);            /* Add Sub Mul Div Pow comparisons logic */
bool dec_variadic(DecCtx *c);             /* Sum Mean Max Min */
bool dec_mod(DecCtx *c);
bool dec_bitshift(DecCtx *c);
bool dec_where(DecCtx *c);
bool dec_cast_op(DecCtx *c);
bool dec_castlike(DecCtx *c);
bool dec_identity(DecCtx *c);
bool dec_dropout(DecCtx *c);
bool dec_clip(DecCtx *c);
bool dec_activation(DecCtx *c);           /* LeakyRelu Elu Selu Celu HardSigmoid ... */
bool dec_prelu(DecCtx *c);
bool dec_gelu(DecCtx *c);
bool dec_isinf(DecCtx *c);
bool dec_constant(DecCtx *c);
bool dec_constant_of_shape(DecCtx *c);
bool dec_range(DecCtx *c);
bool dec_eyelike(DecCtx *c);
bool dec_trilu(DecCtx *c);
bool dec_onehot(DecCtx *c);

/* dec_nn.c (dec_einsum in dec_einsum.c) */
bool dec_conv(DecCtx *c);
bool dec_conv_transpose(DecCtx *c);
bool dec_pool(DecCtx *c);                 /* MaxPool AveragePool LpPool */
bool dec_global_pool(DecCtx *c);          /* GlobalAveragePool GlobalMaxPool GlobalLpPool */
bool dec_gemm(DecCtx *c);
bool dec_matmul(DecCtx *c);
bool dec_einsum(DecCtx *c);

/* dec_norm.c */
bool dec_batchnorm(DecCtx *c);
bool dec_instancenorm(DecCtx *c);
bool dec_layernorm(DecCtx *c);
bool dec_groupnorm(DecCtx *c);
bool dec_rmsnorm(DecCtx *c);
bool dec_lpnorm(DecCtx *c);
bool dec_mvn(DecCtx *c);                  /* MeanVarianceNormalization */
bool dec_lrn(DecCtx *c);

/* dec_shape.c (Gather*, Scatter* in dec_gather.c) */
bool dec_reshape_op(DecCtx *c);
bool dec_shape_op(DecCtx *c);
bool dec_size_op(DecCtx *c);
bool dec_transpose_op(DecCtx *c);
bool dec_squeeze(DecCtx *c);
bool dec_unsqueeze(DecCtx *c);
bool dec_flatten(DecCtx *c);
bool dec_concat_op(DecCtx *c);
bool dec_split(DecCtx *c);
bool dec_slice_op(DecCtx *c);
bool dec_gather_op(DecCtx *c);
bool dec_gather_elements(DecCtx *c);
bool dec_gather_nd(DecCtx *c);
bool dec_scatter_nd(DecCtx *c);
bool dec_scatter_elements(DecCtx *c);
bool dec_expand_op(DecCtx *c);
bool dec_tile(DecCtx *c);
bool dec_pad_op(DecCtx *c);
bool dec_depth_to_space(DecCtx *c);
bool dec_space_to_depth(DecCtx *c);
bool dec_center_crop_pad(DecCtx *c);

/* dec_dynamic.c, dec_unique.c, dec_nms.c: data-dependent output shapes (upper-bound
 * tensors with a device-computed count, ir_dyn_add) */
bool dec_nonzero(DecCtx *c);              /* NonZero */
bool dec_compress(DecCtx *c);             /* Compress */
bool dec_unique(DecCtx *c);               /* Unique */
bool dec_nms(DecCtx *c);                  /* NonMaxSuppression */

/* dec_resize.c */
bool dec_resize(DecCtx *c);               /* Resize, Upsample */

/* dec_attention.c */
bool dec_attention(DecCtx *c);
bool dec_rotary(DecCtx *c);               /* RotaryEmbedding */

/* dec_quant.c */
bool dec_quantize(DecCtx *c);             /* QuantizeLinear */
bool dec_dequantize(DecCtx *c);           /* DequantizeLinear */
bool dec_dynamic_quantize(DecCtx *c);     /* DynamicQuantizeLinear */

/* dec_loss.c */
bool dec_nll_loss(DecCtx *c);             /* NegativeLogLikelihoodLoss */
bool dec_sce_loss(DecCtx *c);             /* SoftmaxCrossEntropyLoss */

/* dec_reduce.c */
bool dec_reduce_op(DecCtx *c);            /* ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum... */
bool dec_softmax(DecCtx *c);              /* Softmax LogSoftmax Hardmax */
bool dec_argminmax(DecCtx *c);
bool dec_cumsum(DecCtx *c);

/* dec_control.c */
bool dec_if(DecCtx *c);
bool dec_loop(DecCtx *c);
bool dec_scan(DecCtx *c);
bool dec_sequence_map(DecCtx *c);
/* Inline subgraph sub (a GRAPH attribute of c's node) once: its first nformal inputs
 * bound to args, the others to the node inputs that capture them; res receives one
 * value per output of sub. False when reported. */
bool dec_call_body(DecCtx *c, IrGraph *sub, int nformal, const ValId *args, ValId *res);

/* dec_flexattn.c */
bool dec_flexattention(DecCtx *c);        /* FlexAttention (ai.onnx.preview) */

/* dec_sequence.c */
bool dec_sequence_op(DecCtx *c);          /* SequenceConstruct/Empty/Insert/Erase/At/Length */
bool dec_concat_from_sequence(DecCtx *c);
bool dec_split_to_sequence(DecCtx *c);
bool dec_optional_op(DecCtx *c);          /* Optional OptionalHasElement OptionalGetElement */

/* dec_rnn.c */
bool dec_rnn(DecCtx *c);                  /* RNN */
bool dec_gru(DecCtx *c);                  /* GRU */
bool dec_lstm(DecCtx *c);                 /* LSTM */

/* dec_attn2.c */
bool dec_linear_attention(DecCtx *c);     /* LinearAttention */
bool dec_causal_conv_state(DecCtx *c);    /* CausalConvWithState */

/* dec_linalg.c, dec_text.c, dec_qlinear.c */
bool dec_det(DecCtx *c);                  /* Det */
bool dec_tfidf(DecCtx *c);                /* TfIdfVectorizer (integer pools) */
bool dec_matmul_integer(DecCtx *c);       /* MatMulInteger */
bool dec_conv_integer(DecCtx *c);         /* ConvInteger */
bool dec_qlinear_matmul(DecCtx *c);       /* QLinearMatMul */
bool dec_qlinear_conv(DecCtx *c);         /* QLinearConv */

#endif
