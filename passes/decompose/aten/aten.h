/* aten.h: private interface of the ATen decompositions (passes/decompose/aten/).
 *
 * The .pt2 frontend turns every ATen call into a FOREIGN node of domain "aten" with
 * op_type "aten.NAME.OVERLOAD". Its tensor arguments are the node's inputs, with the
 * schema name of each in the STRINGS attribute "_in_names"; every other argument is
 * an attribute named after its schema argument (absent when None or defaulted); the
 * outputs carry the dtypes and shapes recorded by torch.export. Handlers find their
 * operands by schema name (aten_in, aten_num, ...) and may rely on the recorded
 * output types (aten_oty), which dec_aten checks against what they build.
 *
 * aten_table.c holds the one table of ATen handlers; in-place variants ("relu_") and
 * "_copy" variants ("view_copy") share the handler of the plain op. The entry points
 * for the driver, dec_aten_find and dec_aten, are declared in dec.h.
 */
#ifndef SPYREC_ATEN_H
#define SPYREC_ATEN_H

#include "passes/decompose/dec.h"

#define ATEN_MAX_LIST 1024                 /* tensors in one list argument */
#define ATEN_IN_NAMES "_in_names"          /* written by the .pt2 frontend */
#define ATEN_IN_STRIDED "_in_strided"      /* likewise, when an input is a strided view */
#define ATEN_MAX_CONST ((int64_t)1 << 24)  /* elements of a constant a handler builds */

/* ---- aten_table.c ---- */
/* The op name without namespace and overload: "aten.add.Tensor" -> "add" (into buf),
 * with in-place and _copy suffixes removed. */
const char *aten_base(const char *op_type, char *buf, size_t len);

/* ---- aten_args.c: argument access ---- */
/* First tensor input named name, or IR_NONE when absent. */
ValId aten_in(const DecCtx *c, const char *name);
/* Every tensor input named name (a list argument), in order; returns the count. */
int aten_ins(const DecCtx *c, const char *name, ValId *out, int max);
/* Whether tensor input name was recorded by torch as a strided view (not the dense
 * row-major prefix of its storage). */
bool aten_in_strided(const DecCtx *c, const char *name);
/* Required tensor input: reports "missing tensor argument" when absent. */
bool aten_need(DecCtx *c, const char *name, ValId *out);
/* Numeric scalar argument (int, bool or float attribute); false when absent. */
bool aten_num(const DecCtx *c, const char *name, double *out);
/* Int list argument into v (up to max): a one-entry list is repeated n times when
 * n > 1 (kernel_size=[3] for a 2-D pool). Returns the count, or -1 when absent. */
int aten_ints(DecCtx *c, const char *name, int64_t *v, int max, int n);
/* Spatial int list argument of n entries (a one-entry list repeats); dflt fills an
 * absent or empty one. False (reported) for another count or a bad argument. */
bool aten_sp_ints(DecCtx *c, const char *name, int n, const int64_t *dflt, int64_t *v);
/* Recorded type of output i. */
const IrType *aten_oty(const DecCtx *c, int i);
/* An operand that may be a tensor input or a scalar attribute, as a value of dtype
 * t (a rank-0 constant for a scalar). IR_NONE (reported) when neither is present. */
ValId aten_operand(DecCtx *c, const char *name, IrDType t);
/* The dtype two operands are combined in for a comparison (torch promotion rules
 * reduced to: floats beat ints beat bool, then the wider type). */
IrDType aten_promote(IrDType a, IrDType b);
/* x cast to the recorded dtype of output i. */
ValId aten_like_out(DecCtx *c, ValId x, int i);

/* ---- handlers: aten_elementwise.c (pointwise, casts, constants) ---- */
bool aten_identity(DecCtx *c);
bool aten_noop(DecCtx *c);
bool aten_to(DecCtx *c);
bool aten_dropout(DecCtx *c);
bool aten_unary(DecCtx *c);
bool aten_binary(DecCtx *c);
bool aten_compare(DecCtx *c);
bool aten_logical(DecCtx *c);
bool aten_where(DecCtx *c);
bool aten_masked_fill(DecCtx *c);
bool aten_pow(DecCtx *c);
bool aten_clamp(DecCtx *c);
bool aten_fill(DecCtx *c);
bool aten_arange(DecCtx *c);
bool aten_copy(DecCtx *c);
bool aten_eye(DecCtx *c);
bool aten_ternary(DecCtx *c);             /* lerp, addcmul, addcdiv */

/* ---- aten_sort.c (topk, sort, argsort) ---- */
bool aten_topk(DecCtx *c);
bool aten_sort(DecCtx *c);

/* ---- aten_activation.c ---- */
bool aten_activation(DecCtx *c);

/* ---- aten_nn.c (contractions, convolutions, embedding, softmax, attention) ---- */
bool aten_linear(DecCtx *c);
bool aten_mm(DecCtx *c);
bool aten_matmul(DecCtx *c);
bool aten_addmm(DecCtx *c);
bool aten_conv(DecCtx *c);
bool aten_embedding(DecCtx *c);
bool aten_softmax(DecCtx *c);
bool aten_sdpa(DecCtx *c);

/* ---- aten_pool.c (pools and resampling) ---- */
bool aten_max_pool(DecCtx *c);
bool aten_im2col(DecCtx *c);                /* nn.Unfold */
bool aten_avg_pool(DecCtx *c);
bool aten_adaptive_pool(DecCtx *c);
bool aten_upsample(DecCtx *c);
bool aten_pixel_shuffle(DecCtx *c);
bool aten_grid_sampler(DecCtx *c);

/* ---- aten_norm.c ---- */
bool aten_batch_norm(DecCtx *c);
bool aten_layer_norm(DecCtx *c);
bool aten_group_norm(DecCtx *c);
bool aten_instance_norm(DecCtx *c);
bool aten_weight_norm(DecCtx *c);         /* _weight_norm, _weight_norm_interface */

/* ---- aten_shape.c (views and data movement) ---- */
bool aten_view(DecCtx *c);
bool aten_flatten(DecCtx *c);
bool aten_unflatten(DecCtx *c);
bool aten_permute(DecCtx *c);
bool aten_transpose(DecCtx *c);
bool aten_unsqueeze(DecCtx *c);
bool aten_squeeze(DecCtx *c);
bool aten_slice(DecCtx *c);
bool aten_select(DecCtx *c);
bool aten_unfold(DecCtx *c);               /* Tensor.unfold: sliding windows */
bool aten_expand(DecCtx *c);
bool aten_repeat(DecCtx *c);
bool aten_repeat_interleave(DecCtx *c);
bool aten_cat(DecCtx *c);
bool aten_stack(DecCtx *c);
bool aten_split(DecCtx *c);
bool aten_unbind(DecCtx *c);
bool aten_flip(DecCtx *c);
bool aten_roll(DecCtx *c);
bool aten_pad(DecCtx *c);
bool aten_tri(DecCtx *c);
bool aten_movedim(DecCtx *c);
bool aten_scatter_view(DecCtx *c);        /* slice_scatter, select_scatter */

/* ---- aten_index.c (indexing) ---- */
bool aten_index(DecCtx *c);               /* index.Tensor: advanced indexing */
bool aten_index_put(DecCtx *c);
bool aten_index_copy(DecCtx *c);
bool aten_index_select(DecCtx *c);
bool aten_gather(DecCtx *c);              /* torch.gather (dix_take_along) */

/* ---- aten_reduce.c (reductions, scans) ---- */
bool aten_reduce(DecCtx *c);
bool aten_var(DecCtx *c);
bool aten_argminmax(DecCtx *c);
bool aten_minmax_dim(DecCtx *c);         /* max/min: .dim, .default and .other */
bool aten_cumsum(DecCtx *c);
bool aten_cumprod(DecCtx *c);
bool aten_logcumsumexp(DecCtx *c);
bool aten_diff(DecCtx *c);

/* ---- aten_scatter.c (scatter family, index_add, masked_scatter) ---- */
bool aten_scatter(DecCtx *c);             /* scatter, scatter_add, scatter_reduce */
bool aten_index_add(DecCtx *c);
/* x with src (broadcast to x's shape with idx's length along ax) scattered along ax
 * at the 1-D indices idx (constant or not), combined by red (DIX_RED_NONE: the last
 * write wins; IR_RED_SUM: accumulate). index_add, index_put, index_copy. IR_NONE
 * when reported. */
ValId aten_put_along(DecCtx *c, ValId x, int ax, ValId idx, ValId src, int red);
bool aten_masked_scatter(DecCtx *c);

/* ---- aten_search.c (isin, bucketize, searchsorted) ---- */
bool aten_isin(DecCtx *c);
bool aten_bucketize(DecCtx *c);           /* bucketize, searchsorted */

/* ---- aten_special.c (pointwise functions built from core ops) ---- */
bool aten_erfinv(DecCtx *c);
bool aten_nan_to_num(DecCtx *c);

/* ---- aten_layout.c (static index maps) ---- */
bool aten_meshgrid(DecCtx *c);
bool aten_as_strided(DecCtx *c);

/* ---- aten_bag.c (embedding_bag) ---- */
bool aten_embedding_bag(DecCtx *c);

/* ---- aten_rnn.c (lstm, gru: the ONNX recurrence core) ---- */
bool aten_rnn(DecCtx *c);

#endif
