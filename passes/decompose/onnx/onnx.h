/* onnx.h: the ONNX operator handlers (passes/decompose/onnx/onnx_*.c), one file per
 * operator family, registered by (domain, op_type, opset range) in the one ONNX table
 * of onnx_table.c. Each handler works as dec.h describes: it reads the node's inputs
 * and attributes, builds core ops and stores one value per output in c->out[].
 */
#ifndef SPYREC_ONNX_H
#define SPYREC_ONNX_H

#include "passes/decompose/dec.h"
#include "passes/decompose/dec_index.h"

/* onnx_elementwise.c: pointwise ops, casts, activations, constant generators */
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
/* 0.5 x (1 + erf(x / sqrt 2)), or with tanh_approx its tanh approximation. */
ValId dec_gelu_of(DecCtx *c, ValId x, bool tanh_approx);
bool dec_isinf(DecCtx *c);
bool dec_image_scaler(DecCtx *c);         /* ImageScaler (experimental, opsets 1-9) */
bool dec_constant(DecCtx *c);
bool dec_constant_of_shape(DecCtx *c);
bool dec_range(DecCtx *c);
bool dec_eyelike(DecCtx *c);
bool dec_trilu(DecCtx *c);
bool dec_onehot(DecCtx *c);

/* onnx_conv_pool.c */
bool dec_conv(DecCtx *c);
/* Conv with the input padded with pad_value (the zero point of an int8 input). */
bool dec_conv_pad(DecCtx *c, double pad_value);
bool dec_conv_transpose(DecCtx *c);
bool dec_pool(DecCtx *c);                 /* MaxPool AveragePool LpPool */
/* AveragePool as onnxruntime's QLinearAveragePool computes it: each sum divided by its
 * count (dec_pool multiplies by the reciprocal, which can differ in the last bit). */
bool dec_avg_pool_divided(DecCtx *c);
bool dec_global_pool(DecCtx *c);          /* GlobalAveragePool GlobalMaxPool GlobalLpPool */

/* onnx_kernel_taps.c */
bool dec_maxpool_indices(DecCtx *c);      /* MaxPool (with its Indices output) */
bool dec_deform_conv(DecCtx *c);          /* DeformConv */

/* onnx_matmul.c (dec_einsum also serves aten.einsum) */
bool dec_gemm(DecCtx *c);
bool dec_matmul(DecCtx *c);
bool dec_einsum(DecCtx *c);

/* onnx_qlinear.c: integer and quantized contractions */
bool dec_matmul_integer(DecCtx *c);       /* MatMulInteger */
bool dec_conv_integer(DecCtx *c);         /* ConvInteger */
/* onnx_qlinear.c: exact int32 products of 8-bit operands (int8 or uint8) with zero
 * points (IR_NONE: 0) on the int8 matrix unit: (a - za) @ (b - zb), za per row of a
 * or scalar, zb per column of b or scalar; and the node's convolution (its attributes)
 * of (x - zx) with (w - zw), zx scalar, zw per output channel or scalar. */
ValId dec_int_matmul(DecCtx *c, ValId a, ValId za, ValId b, ValId zb);
ValId dec_int_conv(DecCtx *c, ValId x, ValId zx, ValId w, ValId zw);
/* v (one element, or 1-D of n > 1 entries) shaped to broadcast along `axis` of rank r. */
ValId dec_view_along(DecCtx *c, ValId v, int axis, int r);
/* onnx_qdq.c: contractions of dequantized 8-bit operands as int8 contractions.
 * dec_qdq_note records a DequantizeLinear result (out) of data x with its scale, zero
 * point (IR_NONE: none) and per-axis axis. dec_qdq_conv: when the node's x and w are
 * such results (x per tensor, w per tensor or per output channel), builds the node's
 * convolution (plus bias) into c->out[0], *ok telling whether that worked, and returns
 * true; false: not a QDQ convolution (nothing built). dec_qdq_matmul: a @ b (b
 * transposed first with trans_b, 2-D) of such results (a per tensor, b per tensor or
 * per output column) as float, adding *bias in int32 and clearing it when it is a
 * dequantized int32 bias of the product's scale; IR_NONE when not a QDQ product. */
void dec_qdq_note(DecCtx *c, ValId out, ValId x, ValId scale, ValId zp, int axis);
bool dec_qdq_conv(DecCtx *c, bool *ok);
ValId dec_qdq_matmul(DecCtx *c, ValId a, ValId b, bool trans_b, ValId *bias);
/* QuantizeLinear of x to dtype out with per-tensor scale and zero point: when x is the
 * dequantization of data of dtype out with equal parameters, that data (requantizing
 * it gives it back exactly); else IR_NONE. */
ValId dec_qdq_requantized(DecCtx *c, ValId x, ValId scale, ValId zp, IrDType out);
/* x / scale for QuantizeLinear when x is the float result of a QDQ contraction,
 * acc * sa * sb, and scale is one constant: acc * (sa * sb / scale), the multiplier
 * rounded once to float32 as onnxruntime's QLinearConv/QLinearMatMul compute it;
 * else IR_NONE. */
ValId dec_qdq_divided(DecCtx *c, ValId x, ValId scale);
bool dec_qlinear_matmul(DecCtx *c);       /* QLinearMatMul */
bool dec_qlinear_conv(DecCtx *c);         /* QLinearConv */

/* onnx_msft.c: contrib operators of onnxruntime (domain com.microsoft, and
 * SimplifiedLayerNormalization of the default domain). dec_sub_run runs handler fn as
 * if the node had inputs in[0..nin) (at most DEC_SUB_MAX_IN), its own attributes when
 * attrs (else none) and op_type op (NULL: its own); results into out[DEC_MAX_OUT]. */
#define DEC_SUB_MAX_IN 16
bool dec_sub_run(DecCtx *c, DecFn fn, const char *op, const ValId *in, int nin, bool attrs,
                 ValId *out);
/* dec_sub_run with the attributes at[0..nat) instead of the node's (made with ir_attr_*) */
bool dec_sub_run_with(DecCtx *c, DecFn fn, const char *op, const ValId *in, int nin,
                      IrAttr *at, int nat, ValId *out);
bool dec_ms_gelu(DecCtx *c);              /* Gelu BiasGelu FastGelu */
bool dec_quick_gelu(DecCtx *c);           /* QuickGelu */
bool dec_fused_matmul(DecCtx *c);         /* FusedMatMul */
bool dec_skip_layernorm(DecCtx *c);       /* SkipLayerNormalization */
bool dec_skip_simplified_layernorm(DecCtx *c); /* SkipSimplifiedLayerNormalization */
bool dec_simplified_layernorm(DecCtx *c); /* SimplifiedLayerNormalization */
bool dec_ms_rotary(DecCtx *c);            /* RotaryEmbedding (com.microsoft) */
bool dec_fused_conv(DecCtx *c);           /* FusedConv */
bool dec_fused_gemm(DecCtx *c);           /* FusedGemm */
/* onnx_qlinear_ms.c: its QOperator-format 8-bit operators, each the float operator
 * between a DequantizeLinear of every 8-bit input and a QuantizeLinear of the result;
 * QGemm (onnx_qlinear.c) an exact int32 product like QLinearMatMul. */
bool dec_qlinear_binary(DecCtx *c);       /* QLinearAdd QLinearMul */
bool dec_qlinear_unary(DecCtx *c);        /* QLinearSigmoid QLinearLeakyRelu */
bool dec_qlinear_pool(DecCtx *c);         /* QLinearAveragePool QLinearGlobalAveragePool */
bool dec_qlinear_concat(DecCtx *c);       /* QLinearConcat */
bool dec_qgemm(DecCtx *c);                /* QGemm */
/* onnx_qmatmul_ms.c: its quantized matrix products */
bool dec_matmul_int_to_float(DecCtx *c);  /* MatMulIntegerToFloat */
bool dec_dynamic_quantize_matmul(DecCtx *c); /* DynamicQuantizeMatMul */
/* x (float) quantized to uint8 as DynamicQuantizeLinear does, times the 8-bit matrix b
 * (zero point bz, scale bs: scalars, or bs per column), exactly in int32, scaled back to
 * float: onnxruntime's dynamically quantized products. IR_NONE after reporting. */
ValId dec_dynq_product(DecCtx *c, ValId x, ValId b, ValId bz, ValId bs);
bool dec_matmul_nbits(DecCtx *c);         /* MatMulNBits */
/* onnx_attn_ms.c: its BERT-style fused embedding and attention */
bool dec_embed_layernorm(DecCtx *c);      /* EmbedLayerNormalization */
bool dec_ms_attention(DecCtx *c);         /* Attention (com.microsoft) */
bool dec_ms_mha(DecCtx *c);               /* MultiHeadAttention */
/* onnx_gqa_ms.c: the grouped-query attention of its LLM exports (onnxruntime-genai) */
bool dec_ms_gqa(DecCtx *c);               /* GroupQueryAttention */

/* onnx_ml.c, onnx_ml_tree.c: the ai.onnx.ml domain (classical machine learning) */
bool dec_ml_binarizer(DecCtx *c);         /* Binarizer */
bool dec_ml_feature_extractor(DecCtx *c); /* ArrayFeatureExtractor */
bool dec_ml_scaler(DecCtx *c);            /* Scaler */
bool dec_ml_normalizer(DecCtx *c);        /* Normalizer */
bool dec_ml_linear_regressor(DecCtx *c);  /* LinearRegressor */
bool dec_ml_tree_ensemble(DecCtx *c);     /* TreeEnsemble (version 5) */
bool dec_ml_tree_regressor(DecCtx *c);    /* TreeEnsembleRegressor (versions 1, 3) */
bool dec_ml_tree_classifier(DecCtx *c);   /* TreeEnsembleClassifier (versions 1, 3) */
bool dec_ml_linear_classifier(DecCtx *c); /* LinearClassifier */
bool dec_ml_imputer(DecCtx *c);           /* Imputer */
bool dec_ml_one_hot(DecCtx *c);           /* OneHotEncoder */
bool dec_ml_feature_vectorizer(DecCtx *c); /* FeatureVectorizer */
bool dec_ml_zipmap(DecCtx *c);            /* ZipMap: refused with a hint */
bool dec_ml_svm_regressor(DecCtx *c);     /* SVMRegressor */
bool dec_ml_svm_classifier(DecCtx *c);    /* SVMClassifier */
/* onnx_ml_class.c: a classifier's outputs. dec_ml_labels: classlabels_int64s as a
 * constant (IR_NONE, reported: string labels). dec_ml_classify: from class scores s
 * [N, C] (bin >= 0: only column bin scores two classes; pos: all weights >= 0; tree:
 * a tree ensemble's two-class rule; base_values base[0..nbase), nbase -1 for none) the
 * label (out[0]) and scores (out[1]) outputs. dec_ml_post_code: post_transform as 0
 * NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT (9 unknown). */
ValId dec_ml_labels(DecCtx *c);
bool dec_ml_classify(DecCtx *c, ValId s, ValId labels, int bin, bool pos, bool tree,
                     const double *base, int64_t nbase);
int64_t dec_ml_post_code(DecCtx *c);

/* onnx_quant.c */
bool dec_quantize(DecCtx *c);             /* QuantizeLinear */
bool dec_dequantize(DecCtx *c);           /* DequantizeLinear */
bool dec_dynamic_quantize(DecCtx *c);     /* DynamicQuantizeLinear */

/* onnx_norm.c */
bool dec_batchnorm(DecCtx *c);
bool dec_instancenorm(DecCtx *c);
bool dec_layernorm(DecCtx *c);
bool dec_groupnorm(DecCtx *c);
bool dec_rmsnorm(DecCtx *c);
bool dec_lpnorm(DecCtx *c);
bool dec_mvn(DecCtx *c);                  /* MeanVarianceNormalization */
bool dec_lrn(DecCtx *c);

/* onnx_loss.c */
bool dec_nll_loss(DecCtx *c);             /* NegativeLogLikelihoodLoss */
bool dec_sce_loss(DecCtx *c);             /* SoftmaxCrossEntropyLoss */

/* onnx_attention.c */
bool dec_attention(DecCtx *c);
bool dec_rotary(DecCtx *c);               /* RotaryEmbedding */

/* onnx_flex_attention.c */
bool dec_flexattention(DecCtx *c);        /* FlexAttention (ai.onnx.preview) */

/* onnx_linear_attention.c */
bool dec_linear_attention(DecCtx *c);     /* LinearAttention */
bool dec_causal_conv_state(DecCtx *c);    /* CausalConvWithState */

/* onnx_rnn.c */
bool dec_rnn(DecCtx *c);                  /* RNN */
bool dec_gru(DecCtx *c);                  /* GRU */
bool dec_lstm(DecCtx *c);                 /* LSTM */
bool dec_dq_lstm(DecCtx *c);              /* com.microsoft DynamicQuantizeLSTM */
/* One recurrent layer in ONNX terms (layout 0, gate orders i,o,f,c and z,r,h). */
typedef struct {
    ValId x;                               /* [T, B, I] */
    ValId w, r, b;                         /* [D, G*H, I], [D, G*H, H], [D, 2*G*H] or IR_NONE */
    ValId h0, c0;                          /* [D, B, H] or IR_NONE (zeros) */
    int dirs;                              /* D: 1 forward, 2 bidirectional */
    bool lstm;                             /* LSTM (G = 4), else GRU, linear_before_reset */
} DecRnnLayer;
/* Unroll one layer with the default activations (shapes checked by the caller):
 * out[0] = Y [T, D, B, H], out[1] = Y_h, out[2] = Y_c (LSTM) [D, B, H]. False
 * (reported) for an empty or too long sequence. (aten.lstm / aten.gru) */
bool dec_rnn_layer(DecCtx *c, const DecRnnLayer *L, ValId out[3]);

/* onnx_linalg.c, onnx_tfidf.c */
bool dec_det(DecCtx *c);                  /* Det */
bool dec_tfidf(DecCtx *c);                /* TfIdfVectorizer (integer pools) */

/* onnx_runshape.c: results whose shape is computed at run time from a shape or axes
 * input (ir_dyn_add_shape). */
typedef enum { DEC_RT_SQUEEZE, DEC_RT_UNSQUEEZE, DEC_RT_REDUCE } DecRtAxes;
/* The result of one candidate axes set (sorted, distinct) of a runtime-axes op. */
typedef ValId (*DecAxesFn)(DecCtx *c, ValId x, const int64_t *axes, int n, const void *arg);
/* The i64 extents d as the int32 ones the runtime reads (beyond int32 or below -1:
 * -1, which fails the run). */
ValId dec_rt_dims32(DecCtx *c, ValId d);
/* Reshape of x to the runtime target shape (ONNX rules for 0 and -1). */
bool dec_rt_reshape(DecCtx *c, ValId x, ValId shape, bool allowzero);
/* Squeeze/Unsqueeze of x, or the reduction fn(x, axes, arg) (DEC_RT_REDUCE), over the
 * runtime axes input; out_rank is the result's rank. */
bool dec_rt_axes(DecCtx *c, DecRtAxes kind, ValId x, ValId axes, int out_rank, DecAxesFn fn,
                 const void *arg);
/* Split of x along axis by the runtime sizes split (one output per entry). */
bool dec_rt_split(DecCtx *c, ValId x, int axis, ValId split);
/* onnx_runslice.c: Slice of x with runtime starts/ends/axes/steps (inputs 1..4); and
 * Expand, Tile, Pad (in mode), CenterCropPad of x with a runtime input 1, bounded by
 * the declared output: false (nothing reported) when the model declares none. */
bool dec_rt_slice(DecCtx *c, ValId x);
bool dec_rt_expand(DecCtx *c, ValId x);
bool dec_rt_tile(DecCtx *c, ValId x);
bool dec_rt_pad(DecCtx *c, ValId x, const char *mode);
bool dec_rt_center_crop_pad(DecCtx *c, ValId x);
/* c's output 0: the box [0, lens[a]) of y (its dims the bound; lens i64 scalars) as the
 * row-major prefix of the actual shape. */
void dec_rt_box(DecCtx *c, ValId y, const ValId *lens);
/* onnx_runresize.c: Resize/Upsample with the runtime scales or sizes (the other one
 * IR_NONE), bounded by the declared output; false (nothing reported) when the case is
 * not covered (antialias, tf_crop_and_resize, no declared shape). */
bool dec_rt_resize(DecCtx *c, bool upsample, ValId scales, ValId sizes);
/* Axis `axis` of x resized to B positions (its size at the bounds) by the node's
 * Resize parameters from x's actual length to the actual length of src's axis
 * src_axis, where that size came from (Shape of src folded at the bounds); IR_NONE
 * when the node's mode is not covered (onnx_runresize.c). */
ValId dec_sym_resize_axis(DecCtx *c, ValId x, int axis, int64_t B, const IrExtElem *size);
/* Range with runtime start/limit/delta, its length bounded by the declared output
 * length; false (nothing reported) when the model declares none. */
bool dec_rt_range(DecCtx *c);
/* Hann (kind 0), Hamming (1) or Blackman (2) window of a runtime size, bounded by the
 * declared output length; false (nothing reported) when the model declares none. */
bool dec_rt_window(DecCtx *c, IrDType dt, int kind);
/* ConstantOfShape: the scalar s over the runtime shape input 0, at the capacity of the
 * declared output; false (nothing reported) when the model declares none. */
bool dec_rt_fill(DecCtx *c, ValId s);

/* onnx_shape.c: shapes and data movement */
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
bool dec_expand_op(DecCtx *c);
bool dec_tile(DecCtx *c);
bool dec_pad_op(DecCtx *c);
bool dec_depth_to_space(DecCtx *c);
bool dec_space_to_depth(DecCtx *c);
bool dec_center_crop_pad(DecCtx *c);

/* onnx_bitcast.c */
bool dec_bitcast(DecCtx *c);

/* onnx_gather.c */
bool dec_gather_op(DecCtx *c);
bool dec_gather_elements(DecCtx *c);
bool dec_gather_nd(DecCtx *c);
bool dec_reverse_sequence(DecCtx *c);
/* A GATHER along axis of constant indices idx that all count from the end, counted
 * from the axis's actual extent (SYMLEN), marked inbounds: for graphs with bounded
 * symbolic dimensions, where the extent may be smaller than the bound. */
ValId dec_gather_from_end(DecCtx *c, ValId data, ValId idx, int axis);

/* onnx_scatter.c */
bool dec_scatter_nd(DecCtx *c);           /* ScatterND: every reduction, runtime indices */
bool dec_scatter_elements(DecCtx *c);     /* ScatterElements and Scatter (opset 9/10) */
/* data with upd scattered along axis at idx (same rank as data; upd shaped like idx;
 * indices may be negative or known only at run time), combined by red (DIX_RED_NONE:
 * the last update wins, or an IrRedFn with data): ScatterElements and the ATen
 * scatter family. IR_NONE (reported) on a shape mismatch. */
ValId dec_scatter_along(DecCtx *c, ValId data, ValId idx, ValId upd, int axis, int red);
bool dec_tensor_scatter(DecCtx *c);
bool dec_max_unpool(DecCtx *c);
bool dec_col2im(DecCtx *c);

/* onnx_resize.c, onnx_grid_sample.c, onnx_roi_align.c: resampling */
bool dec_resize(DecCtx *c);               /* Resize, Upsample */
bool dec_grid_sample(DecCtx *c);
/* The sampling itself (also for ATen grid_sampler); IR_NONE (reported) on bad shapes. */
ValId dec_grid_sample_core(DecCtx *c, ValId x, ValId grid, DixMode mode, DixPad pad,
                           bool align);
bool dec_affine_grid(DecCtx *c);
bool dec_roi_align(DecCtx *c);

/* onnx_dynamic.c, onnx_unique.c, onnx_nms.c: data-dependent output shapes
 * (upper-bound tensors with a device-computed count, ir_dyn_add) */
bool dec_nonzero(DecCtx *c);              /* NonZero */
bool dec_compress(DecCtx *c);             /* Compress */
bool dec_unique(DecCtx *c);               /* Unique */
bool dec_nms(DecCtx *c);                  /* NonMaxSuppression */

/* onnx_reduce.c: reductions, softmax variants, arg-reductions, scans */
bool dec_reduce_op(DecCtx *c);            /* ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum... */
bool dec_softmax(DecCtx *c);              /* Softmax LogSoftmax Hardmax */
bool dec_argminmax(DecCtx *c);
bool dec_cumsum(DecCtx *c);
bool dec_cumprod(DecCtx *c);
/* Inclusive/exclusive, forward/reverse cumulative product of x along axis (CumProd,
 * aten.cumprod). */
ValId dec_cumprod_axis(DecCtx *c, ValId x, int axis, bool excl, bool rev);
/* Inclusive scan of x along axis (reverse: from the end) with an associative op whose
 * identity is fill: log2(n) rounds of combining with a shifted copy. */
typedef ValId (*DecCombine)(DecCtx *c, ValId a, ValId b);
ValId dec_scan_axis(DecCtx *c, ValId x, int axis, bool rev, double fill, DecCombine op);

/* onnx_topk.c */
bool dec_topk(DecCtx *c);
/* k largest (smallest) along axis, sorted, ties by lower index; kv a runtime k or
 * IR_NONE (see onnx_topk.c). */
bool dec_topk_axis(DecCtx *c, ValId x, int axis, int64_t k, ValId kv, bool largest,
                   ValId *vals, ValId *idxs);

/* onnx_signal.c */
bool dec_dft(DecCtx *c);
bool dec_stft(DecCtx *c);
bool dec_window(DecCtx *c);               /* HannWindow HammingWindow BlackmanWindow */
bool dec_mel_weight_matrix(DecCtx *c);

/* onnx_control.c */
bool dec_if(DecCtx *c);
bool dec_loop(DecCtx *c);
bool dec_scan(DecCtx *c);
bool dec_sequence_map(DecCtx *c);
/* Inline subgraph sub (a GRAPH attribute of c's node) once: its first nformal inputs
 * bound to args, the others to the node inputs that capture them; res receives one
 * value per output of sub. False when reported. */
bool dec_call_body(DecCtx *c, IrGraph *sub, int nformal, const ValId *args, ValId *res);

/* onnx_sequence.c */
bool dec_sequence_op(DecCtx *c);          /* SequenceConstruct/Empty/Insert/Erase/At/Length */
bool dec_concat_from_sequence(DecCtx *c);
bool dec_split_to_sequence(DecCtx *c);
bool dec_optional_op(DecCtx *c);          /* Optional OptionalHasElement OptionalGetElement */

#endif
