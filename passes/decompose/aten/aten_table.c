/* aten_table.c: the table of ATen decompositions (domain "aten"): every supported
 * op name and the handler (aten_*.c) that lowers it. decompose.c hands every "aten"
 * node to dec_aten(), which dispatches on the op name (overloads are told apart by
 * the handlers, which read arguments by name) and checks the results against the
 * types torch.export recorded.
 */
#include <stdio.h>
#include <string.h>

#include "aten.h"
#include "passes/decompose/onnx/onnx.h" /* dec_einsum serves aten.einsum too */

typedef struct {
    const char *name;                      /* op name without namespace and overload */
    DecFn fn;
} AtenEntry;

/* The one table, by op name. */
static const AtenEntry aten_table[] = {
    /* no-ops and identities */
    {"_assert_tensor_metadata", aten_noop}, {"_assert_scalar", aten_noop},
    {"_assert_async", aten_noop}, {"sym_constrain_range_for_size", aten_noop},
    {"alias", aten_identity}, {"clone", aten_identity}, {"contiguous", aten_identity},
    {"detach", aten_identity}, {"lift_fresh", aten_identity}, {"positive", aten_identity},
    {"resolve_conj", aten_identity}, {"resolve_neg", aten_identity},
    {"dropout", aten_dropout}, {"feature_dropout", aten_dropout},
    {"alpha_dropout", aten_dropout}, {"native_dropout", aten_dropout},
    {"to", aten_to}, {"_to_copy", aten_to}, {"type_as", aten_to},
    /* pointwise */
    {"abs", aten_unary}, {"neg", aten_unary}, {"exp", aten_unary}, {"log", aten_unary},
    {"sqrt", aten_unary}, {"rsqrt", aten_unary}, {"reciprocal", aten_unary},
    {"tanh", aten_unary}, {"sigmoid", aten_unary}, {"erf", aten_unary},
    {"floor", aten_unary}, {"ceil", aten_unary}, {"round", aten_unary}, {"sin", aten_unary},
    {"cos", aten_unary}, {"tan", aten_unary}, {"asin", aten_unary}, {"acos", aten_unary},
    {"atan", aten_unary}, {"sinh", aten_unary}, {"cosh", aten_unary},
    {"asinh", aten_unary}, {"acosh", aten_unary}, {"atanh", aten_unary},
    {"sign", aten_unary}, {"sgn", aten_unary}, {"logical_not", aten_unary},
    {"bitwise_not", aten_unary}, {"isnan", aten_unary}, {"isinf", aten_unary},
    {"isfinite", aten_unary}, {"relu", aten_unary}, {"log1p", aten_unary},
    {"expm1", aten_unary}, {"log2", aten_unary}, {"log10", aten_unary},
    {"exp2", aten_unary}, {"square", aten_unary}, {"trunc", aten_unary}, {"fix", aten_unary},
    {"frac", aten_unary}, {"erfc", aten_unary}, {"absolute", aten_unary},
    {"negative", aten_unary}, {"arcsin", aten_unary}, {"arccos", aten_unary},
    {"arctan", aten_unary}, {"arcsinh", aten_unary}, {"arccosh", aten_unary},
    {"arctanh", aten_unary},
    {"gelu", aten_activation}, {"silu", aten_activation}, {"hardtanh", aten_activation},
    {"relu6", aten_activation}, {"leaky_relu", aten_activation}, {"elu", aten_activation},
    {"selu", aten_activation}, {"celu", aten_activation}, {"hardsigmoid", aten_activation},
    {"hardswish", aten_activation}, {"mish", aten_activation}, {"softplus", aten_activation},
    {"log_sigmoid", aten_activation}, {"prelu", aten_activation},
    {"_prelu_kernel", aten_activation}, {"glu", aten_activation},
    {"add", aten_binary}, {"sub", aten_binary}, {"rsub", aten_binary}, {"mul", aten_binary},
    {"div", aten_binary}, {"true_divide", aten_binary}, {"floor_divide", aten_binary},
    {"remainder", aten_binary}, {"fmod", aten_binary}, {"maximum", aten_binary},
    {"minimum", aten_binary}, {"atan2", aten_binary}, {"bitwise_and", aten_binary},
    {"bitwise_or", aten_binary}, {"bitwise_xor", aten_binary}, {"__and__", aten_binary},
    {"__or__", aten_binary}, {"__xor__", aten_binary}, {"__lshift__", aten_binary},
    {"__rshift__", aten_binary}, {"bitwise_left_shift", aten_binary},
    {"bitwise_right_shift", aten_binary}, {"multiply", aten_binary},
    {"subtract", aten_binary}, {"divide", aten_binary}, {"arctan2", aten_binary},
    {"eq", aten_compare}, {"ne", aten_compare}, {"lt", aten_compare}, {"le", aten_compare},
    {"gt", aten_compare}, {"ge", aten_compare}, {"greater", aten_compare},
    {"greater_equal", aten_compare}, {"less", aten_compare}, {"less_equal", aten_compare},
    {"not_equal", aten_compare}, {"logical_and", aten_logical},
    {"logical_or", aten_logical}, {"logical_xor", aten_logical},
    {"where", aten_where}, {"masked_fill", aten_masked_fill}, {"pow", aten_pow},
    {"clamp", aten_clamp}, {"clip", aten_clamp}, {"clamp_min", aten_clamp},
    {"clamp_max", aten_clamp}, {"lerp", aten_ternary}, {"addcmul", aten_ternary},
    {"addcdiv", aten_ternary},
    /* constants */
    {"full", aten_fill}, {"full_like", aten_fill}, {"zeros", aten_fill},
    {"zeros_like", aten_fill}, {"ones", aten_fill}, {"ones_like", aten_fill},
    {"empty", aten_fill}, {"empty_like", aten_fill}, {"empty_strided", aten_fill},
    {"new_ones", aten_fill}, {"new_zeros", aten_fill}, {"new_full", aten_fill},
    {"new_empty", aten_fill}, {"new_empty_strided", aten_fill},
    {"scalar_tensor", aten_fill}, {"fill", aten_fill}, {"zero", aten_fill},
    {"arange", aten_arange}, {"copy", aten_copy}, {"eye", aten_eye},
    /* contractions, convolutions, pools, normalisations */
    {"linear", aten_linear}, {"mm", aten_mm}, {"bmm", aten_mm}, {"matmul", aten_matmul},
    {"addmm", aten_addmm}, {"baddbmm", aten_addmm}, {"einsum", dec_einsum},
    {"conv1d", aten_conv}, {"conv2d", aten_conv}, {"conv3d", aten_conv},
    {"convolution", aten_conv}, {"_convolution", aten_conv},
    {"conv_transpose1d", aten_conv}, {"conv_transpose2d", aten_conv},
    {"conv_transpose3d", aten_conv},
    {"max_pool1d", aten_max_pool}, {"max_pool2d", aten_max_pool},
    {"max_pool3d", aten_max_pool}, {"max_pool2d_with_indices", aten_max_pool},
    {"max_pool3d_with_indices", aten_max_pool}, {"im2col", aten_im2col},
    {"avg_pool1d", aten_avg_pool}, {"avg_pool2d", aten_avg_pool},
    {"avg_pool3d", aten_avg_pool},
    {"adaptive_avg_pool1d", aten_adaptive_pool}, {"adaptive_avg_pool2d", aten_adaptive_pool},
    {"adaptive_avg_pool3d", aten_adaptive_pool}, {"_adaptive_avg_pool2d", aten_adaptive_pool},
    {"_adaptive_avg_pool3d", aten_adaptive_pool}, {"adaptive_max_pool1d", aten_adaptive_pool},
    {"adaptive_max_pool2d", aten_adaptive_pool},
    {"batch_norm", aten_batch_norm}, {"native_batch_norm", aten_batch_norm},
    {"_native_batch_norm_legit_no_training", aten_batch_norm},
    {"_native_batch_norm_legit", aten_batch_norm},
    {"_native_batch_norm_legit_functional", aten_batch_norm},
    {"layer_norm", aten_layer_norm}, {"native_layer_norm", aten_layer_norm},
    {"rms_norm", aten_layer_norm}, {"group_norm", aten_group_norm},
    {"native_group_norm", aten_group_norm}, {"instance_norm", aten_instance_norm},
    {"embedding", aten_embedding}, {"softmax", aten_softmax}, {"_softmax", aten_softmax},
    {"log_softmax", aten_softmax}, {"_log_softmax", aten_softmax},
    {"scaled_dot_product_attention", aten_sdpa},
    {"upsample_nearest1d", aten_upsample}, {"upsample_nearest2d", aten_upsample},
    {"upsample_nearest3d", aten_upsample}, {"upsample_bilinear2d", aten_upsample},
    {"upsample_bicubic2d", aten_upsample},
    {"upsample_linear1d", aten_upsample}, {"_upsample_nearest_exact1d", aten_upsample},
    {"_upsample_nearest_exact2d", aten_upsample}, {"_upsample_nearest_exact3d", aten_upsample},
    {"pixel_shuffle", aten_pixel_shuffle}, {"grid_sampler", aten_grid_sampler},
    {"grid_sampler_2d", aten_grid_sampler}, {"grid_sampler_3d", aten_grid_sampler},
    {"pixel_unshuffle", aten_pixel_shuffle},
    /* views and data movement */
    {"view", aten_view}, {"_unsafe_view", aten_view}, {"reshape", aten_view},
    {"view_as", aten_view}, {"reshape_as", aten_view}, {"ravel", aten_view},
    {"flatten", aten_flatten},
    {"unflatten", aten_unflatten}, {"permute", aten_permute}, {"transpose", aten_transpose},
    {"t", aten_transpose}, {"swapaxes", aten_transpose}, {"swapdims", aten_transpose},
    {"numpy_T", aten_permute}, {"movedim", aten_movedim}, {"moveaxis", aten_movedim},
    {"unsqueeze", aten_unsqueeze}, {"squeeze", aten_squeeze},
    {"slice", aten_slice}, {"narrow", aten_slice}, {"select", aten_select},
    {"unfold", aten_unfold},
    {"expand", aten_expand}, {"expand_as", aten_expand}, {"broadcast_to", aten_expand},
    {"repeat", aten_repeat}, {"repeat_interleave", aten_repeat_interleave}, {"cat", aten_cat}, {"concat", aten_cat},
    {"concatenate", aten_cat}, {"stack", aten_stack}, {"split", aten_split},
    {"split_with_sizes", aten_split}, {"chunk", aten_split}, {"unsafe_split", aten_split},
    {"unsafe_split_with_sizes", aten_split}, {"unsafe_chunk", aten_split},
    {"tensor_split", aten_split}, {"unbind", aten_unbind},
    {"slice_scatter", aten_scatter_view}, {"select_scatter", aten_scatter_view},
    {"flip", aten_flip}, {"roll", aten_roll}, {"constant_pad_nd", aten_pad},
    {"pad", aten_pad}, {"reflection_pad1d", aten_pad}, {"reflection_pad2d", aten_pad},
    {"reflection_pad3d", aten_pad}, {"replication_pad1d", aten_pad},
    {"replication_pad2d", aten_pad}, {"replication_pad3d", aten_pad},
    {"tril", aten_tri}, {"triu", aten_tri},
    /* indexing, reductions, scans */
    {"index", aten_index}, {"index_put", aten_index_put}, {"index_copy", aten_index_copy},
    {"index_select", aten_index_select}, {"gather", aten_gather},
    {"sum", aten_reduce}, {"mean", aten_reduce}, {"amax", aten_reduce},
    {"amin", aten_reduce}, {"prod", aten_reduce}, {"any", aten_reduce},
    {"all", aten_reduce}, {"logsumexp", aten_reduce}, {"linalg_vector_norm", aten_reduce},
    {"var", aten_var}, {"std", aten_var}, {"var_mean", aten_var}, {"std_mean", aten_var}, {"argmax", aten_argminmax},
    {"argmin", aten_argminmax}, {"max", aten_minmax_dim}, {"min", aten_minmax_dim},
    {"cumsum", aten_cumsum}, {"cumprod", aten_cumprod}, {"logcumsumexp", aten_logcumsumexp},
    {"diff", aten_diff}, {"topk", aten_topk}, {"sort", aten_sort}, {"argsort", aten_sort},
    {"scatter", aten_scatter}, {"scatter_add", aten_scatter}, {"scatter_reduce", aten_scatter},
    {"index_add", aten_index_add}, {"masked_scatter", aten_masked_scatter},
    {"isin", aten_isin}, {"bucketize", aten_bucketize}, {"searchsorted", aten_bucketize},
    /* special functions, index maps, bags, recurrences */
    {"erfinv", aten_erfinv}, {"nan_to_num", aten_nan_to_num},
    {"meshgrid", aten_meshgrid}, {"as_strided", aten_as_strided},
    {"_weight_norm", aten_weight_norm}, {"_weight_norm_interface", aten_weight_norm},
    {"embedding_bag", aten_embedding_bag}, {"_embedding_bag", aten_embedding_bag},
    {"_embedding_bag_forward_only", aten_embedding_bag},
    {"lstm", aten_rnn}, {"gru", aten_rnn},
};

#define ATEN_TABLE_LEN ((int)(sizeof aten_table / sizeof aten_table[0]))

/* Handler for an exact op name, or NULL. */
static DecFn find_name(const char *name)
{
    for (int i = 0; i < ATEN_TABLE_LEN; i++)
        if (strcmp(aten_table[i].name, name) == 0)
            return aten_table[i].fn;
    return NULL;
}

/* Whether stem is an ATen view op, whose functional form stem_copy (what
 * functionalization emits) computes the same values. Only these lose their "_copy":
 * other ops whose names end in it (index_copy) are ops of their own. */
static bool is_view_stem(const char *stem)
{
    static const char *const views[] = {
        "alias", "as_strided", "detach", "diagonal", "expand", "lift_fresh", "narrow",
        "permute", "_reshape_alias", "select", "slice", "split", "split_with_sizes",
        "squeeze", "t", "transpose", "unbind", "unfold", "unsqueeze", "view", "_unsafe_view",
    };
    for (size_t i = 0; i < sizeof views / sizeof views[0]; i++)
        if (strcmp(stem, views[i]) == 0)
            return true;
    return false;
}

/* "aten.relu_.default" -> "relu" (see aten.h). Returns NULL if op_type is not an
 * ATen op type. */
const char *aten_base(const char *op_type, char *buf, size_t len)
{
    if (!op_type || strncmp(op_type, "aten.", 5) != 0)
        return NULL;
    const char *s = op_type + 5, *dot = strrchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n == 0 || n >= len)
        return NULL;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (find_name(buf))
        return buf;
    if (n > 1 && buf[n - 1] == '_' && buf[n - 2] != '_') { /* in-place: relu_ */
        buf[n - 1] = 0;
        if (find_name(buf))
            return buf;
        buf[n - 1] = '_';
    }
    if (n > 5 && strcmp(buf + n - 5, "_copy") == 0) {     /* functional view copies */
        buf[n - 5] = 0;
        if (is_view_stem(buf) && find_name(buf))
            return buf;
        buf[n - 5] = '_';
    }
    return buf;
}

/* Handler for an ATen op type, or NULL when unsupported. */
DecFn dec_aten_find(const char *op_type)
{
    char buf[128];
    const char *base = aten_base(op_type, buf, sizeof buf);
    return base ? find_name(base) : NULL;
}

/* "f32[2, 3]" into buf. */
static const char *type_str(const IrType *t, char *buf, size_t len)
{
    size_t o = (size_t)snprintf(buf, len, "%s[", ir_dtype_name(t->dtype));
    for (int i = 0; i < t->rank && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, "%s%lld", i ? ", " : "", (long long)t->dims[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
    return buf;
}

/* The results must have the types torch.export recorded; a difference means the
 * archive's tensor metadata is inconsistent (reported here in those terms). */
static bool check_recorded(DecCtx *c)
{
    for (int i = 0; i < c->n->nout && i < DEC_MAX_OUT; i++) {
        if (c->out[i] == IR_NONE)
            continue;
        const IrType *want = aten_oty(c, i), *got = dec_ty(c, c->out[i]);
        if (want->dtype == IR_DT_UNDEF || got->dtype == IR_DT_UNDEF || ir_type_eq(want, got))
            continue;
        char a[160], b[160];
        dec_err(c, "output %d: the archive records %s, but the operation on these inputs "
                "gives %s (inconsistent tensor metadata)", i, type_str(want, a, sizeof a),
                type_str(got, b, sizeof b));
        return false;
    }
    return true;
}

/* Entry point from decompose.c for every node of domain "aten". */
bool dec_aten(DecCtx *c)
{
    DecFn fn = dec_aten_find(c->n->foreign.op_type);
    if (!fn) {
        dec_err(c, "unsupported ATen operator %s", c->n->foreign.op_type);
        return false;
    }
    return fn(c) && !ir_failed(c->g) && check_recorded(c);
}
