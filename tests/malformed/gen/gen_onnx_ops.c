/* gen_onnx_ops.c: ONNX files with bad operator sets, unknown operators, attributes of
 * the wrong type, axes and indices out of range, zero strides or groups, kernels
 * larger than their padded input, and operands whose shapes do not fit. Every
 * message must name the node. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* x[1,1,8,8] -> Conv(W[2,1,k,k]) with the given attributes -> y. */
static void conv_case(const char *file, int k, Buf a1, Buf a2, const char *frag)
{
    Buf g = {0};
    Buf n = ox_node("Conv", "conv1", IN("x", "W"), IN("y"));
    if (a1.p)
        pb_msg(&n, 5, &a1);
    if (a2.p)
        pb_msg(&n, 5, &a2);
    pb_msg(&g, 1, &n);
    g_init_f32(&g, "W", DIMS(2, 1, k, k));
    g_input(&g, "x", ONNX_FLOAT, DIMS(1, 1, 8, 8));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1, 2, 6, 6));
    g_case(file, &g, 13, frag);
}

/* x[2,3,4,5] -> op(attributes) -> y (the output type is left to inference). */
static void unary_case(const char *file, const char *op, Buf a1, Buf a2, const char *frag)
{
    Buf g = {0};
    Buf n = ox_node(op, "op1", IN("x"), IN("y"));
    if (a1.p)
        pb_msg(&n, 5, &a1);
    if (a2.p)
        pb_msg(&n, 5, &a2);
    pb_msg(&g, 1, &n);
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 3, 4, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case(file, &g, 13, frag);
}

static void opsets(void)
{
    Buf g = onnx_base_graph();
    g_case("onnx/opset_missing.onnx", &g, -1, "missing opset_import");
    g = onnx_base_graph();
    g_case("onnx/opset_zero.onnx", &g, 0, "opset_import of domain '' has no valid version");
    g = onnx_base_graph();
    Buf m = {0};
    pb_int(&m, 1, 8);
    Buf o = ox_opset("", 13);
    pb_msg(&m, 8, &o);
    o = ox_opset("ai.onnx", 11);
    pb_msg(&m, 8, &o);
    pb_msg(&m, 7, &g);
    gen_case("onnx/opset_twice.onnx", m.p, m.n, "spyrec", 2, "opset_import lists domain '' twice",
             NULL);
    buf_free(&m);
    g = onnx_base_graph();
    g_case("onnx/opset_9999.onnx", &g, 9999, "9999");
    g = (Buf){0};
    Buf n = ox_node("Relu", "custom1", IN("x"), IN("y"));
    pb_str(&n, 7, "com.example.custom");
    pb_msg(&g, 1, &n);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/unknown_domain.onnx", &g, 13,
           "node 'custom1' (Relu): unknown domain 'com.example.custom'");
    g = (Buf){0};
    g_node(&g, "FrobnicateTensor", "frob1", IN("x"), IN("t"), AEND);
    g_node(&g, "Relu", "r", IN("t"), IN("u"), AEND);
    g_node(&g, "QuantumFourier", "qft1", IN("u"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/unknown_op.onnx", &g, 13,
           "node 'qft1' (QuantumFourier): unsupported operator QuantumFourier (opset 13)");
    g = (Buf){0};
    g_node(&g, "Gelu", "gelu1", IN("x"), IN("y"), AEND); /* Gelu exists from opset 20 */
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/op_newer_than_opset.onnx", &g, 13,
           "node 'gelu1' (Gelu): unsupported operator Gelu (opset 13)");
}

static void attributes(void)
{
    conv_case("onnx/attr_kernel_shape_float.onnx", 3, ox_attr_float("kernel_shape", 3.0f), AEND,
              "node 'conv1' (Conv)");
    conv_case("onnx/attr_pads_string.onnx", 3, ox_attr_str("pads", "same"), AEND,
              "node 'conv1' (Conv)");
    conv_case("onnx/attr_strides_zero.onnx", 3, ox_attr_ints("strides", (int64_t[]){0, 0}, 2), AEND,
              "node 'conv1' (Conv): strides[0] is 0, must be >= 1");
    conv_case("onnx/attr_strides_negative.onnx", 3, ox_attr_ints("strides", (int64_t[]){-1, 1}, 2),
              AEND, "node 'conv1' (Conv): strides[0] is -1, must be >= 1");
    conv_case("onnx/attr_dilations_zero.onnx", 3, ox_attr_ints("dilations", (int64_t[]){0, 1}, 2),
              AEND, "node 'conv1' (Conv): dilations[0] is 0, must be >= 1");
    conv_case("onnx/attr_group_zero.onnx", 3, ox_attr_int("group", 0), AEND,
              "node 'conv1' (Conv): group 0 does not match input channels 1 and weight shape");
    conv_case("onnx/attr_group_3.onnx", 3, ox_attr_int("group", 3), AEND,
              "node 'conv1' (Conv): group 3 does not match input channels 1 and weight shape");
    conv_case("onnx/attr_pads_negative.onnx", 3,
              ox_attr_ints("pads", (int64_t[]){-5, -5, -5, -5}, 4), AEND,
              "node 'conv1' (Conv): negative pads are not allowed");
    conv_case("onnx/attr_pads_wrong_count.onnx", 3, ox_attr_ints("pads", (int64_t[]){1, 1, 1}, 3),
              AEND, "node 'conv1' (Conv): attribute pads has 3 entries, expected 4");
    conv_case("onnx/kernel_larger_than_input.onnx", 11,
              ox_attr_ints("pads", (int64_t[]){1, 1, 1, 1}, 4), AEND,
              "node 'conv1' (Conv): kernel extent 11 is larger than the padded input 10 on axis 2");
    conv_case("onnx/kernel_shape_mismatch.onnx", 3,
              ox_attr_ints("kernel_shape", (int64_t[]){5, 5}, 2), AEND,
              "node 'conv1' (Conv): kernel_shape does not match the weight's spatial dims");
    conv_case("onnx/attr_auto_pad_bogus.onnx", 3, ox_attr_str("auto_pad", "SIDEWAYS"), AEND,
              "node 'conv1' (Conv): unknown auto_pad 'SIDEWAYS'");
    unary_case(
        "onnx/maxpool_kernel_20.onnx", "MaxPool",
        ox_attr_ints("kernel_shape", (int64_t[]){20, 20}, 2), AEND,
        "node 'op1' (MaxPool): kernel extent 20 is larger than the padded input 4 on axis 2");
    unary_case("onnx/maxpool_strides_zero.onnx", "MaxPool",
               ox_attr_ints("kernel_shape", (int64_t[]){2, 2}, 2),
               ox_attr_ints("strides", (int64_t[]){0, 0}, 2),
               "node 'op1' (MaxPool): strides[0] is 0, must be >= 1");
    unary_case("onnx/maxpool_no_kernel.onnx", "MaxPool", AEND, AEND,
               "node 'op1' (MaxPool): kernel_shape[0] is 0, must be >= 1");
    unary_case("onnx/avgpool_kernel_zero.onnx", "AveragePool",
               ox_attr_ints("kernel_shape", (int64_t[]){0, 2}, 2), AEND,
               "node 'op1' (AveragePool): kernel_shape[0] is 0, must be >= 1");
    unary_case("onnx/softmax_axis_10.onnx", "Softmax", ox_attr_int("axis", 10), AEND,
               "node 'op1' (Softmax): axis 10 out of range for rank 4");
    unary_case("onnx/softmax_axis_string.onnx", "Softmax", ox_attr_str("axis", "last"), AEND,
               "node 'op1' (Softmax)");
    unary_case("onnx/flatten_axis_9.onnx", "Flatten", ox_attr_int("axis", 9), AEND,
               "node 'op1' (Flatten): axis 9 out of range for rank 4");
    unary_case("onnx/transpose_perm_range.onnx", "Transpose",
               ox_attr_ints("perm", (int64_t[]){0, 5, 1, 2}, 4), AEND,
               "node 'op1' (Transpose): perm is not a permutation of 0..3");
    unary_case("onnx/transpose_perm_repeat.onnx", "Transpose",
               ox_attr_ints("perm", (int64_t[]){0, 1, 1, 2}, 4), AEND,
               "node 'op1' (Transpose): perm is not a permutation of 0..3");
    unary_case("onnx/transpose_perm_short.onnx", "Transpose",
               ox_attr_ints("perm", (int64_t[]){1, 0}, 2), AEND,
               "node 'op1' (Transpose): perm has 2 entries for rank 4");
    unary_case("onnx/concat_no_axis.onnx", "Concat", AEND, AEND,
               "node 'op1' (Concat): missing attribute axis");
    unary_case("onnx/concat_axis_minus9.onnx", "Concat", ox_attr_int("axis", -9), AEND,
               "node 'op1' (Concat): axis -9 out of range for rank 4");
    unary_case("onnx/argmax_axis_huge.onnx", "ArgMax", ox_attr_int("axis", 1LL << 40), AEND,
               "node 'op1' (ArgMax): axis 1099511627776 out of range for rank 4");
    unary_case("onnx/reducemax_axes_range.onnx", "ReduceMax",
               ox_attr_ints("axes", (int64_t[]){7}, 1), AEND,
               "node 'op1' (ReduceMax): axis 7 out of range for rank 4");
    unary_case("onnx/lrn_size_zero.onnx", "LRN", ox_attr_int("size", 0), AEND,
               "node 'op1' (LRN): needs input rank >= 3 and size >= 1");
    unary_case("onnx/depthtospace_block_zero.onnx", "DepthToSpace", ox_attr_int("blocksize", 0),
               AEND,
               "node 'op1' (DepthToSpace): needs a 4-D input whose channels divide by blocksize^2");
    unary_case(
        "onnx/spacetodepth_block_3.onnx", "SpaceToDepth", ox_attr_int("blocksize", 3), AEND,
        "node 'op1' (SpaceToDepth): needs a 4-D input whose spatial dims divide by blocksize");
    unary_case("onnx/leakyrelu_alpha_ints.onnx", "LeakyRelu",
               ox_attr_ints("alpha", (int64_t[]){1, 2}, 2), AEND, "node 'op1' (LeakyRelu)");
    unary_case("onnx/cast_to_99.onnx", "Cast", ox_attr_int("to", 99), AEND,
               "node 'op1' (Cast): unsupported: cast to dtype 99");
    unary_case("onnx/cast_to_string.onnx", "Cast", ox_attr_int("to", 8), AEND,
               "node 'op1' (Cast): unsupported: cast to dtype 8");
}

/* x[2,3,4,5] and a constant second operand (int64 values) -> op -> y. */
static void const_operand_case(const char *file, const char *op, const int64_t *v, int n, Buf a1,
                               const char *frag)
{
    Buf g = {0};
    Buf nd = ox_node(op, "op1", IN("x", "k"), IN("y"));
    if (a1.p)
        pb_msg(&nd, 5, &a1);
    pb_msg(&g, 1, &nd);
    g_init_i64(&g, "k", v, n);
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 3, 4, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case(file, &g, 13, frag);
}

static void operands(void)
{
    const_operand_case("onnx/gather_index_100.onnx", "Gather", (int64_t[]){0, 100}, 2,
                       ox_attr_int("axis", 1),
                       "node 'op1' (Gather): index 100 out of range for dimension 3");
    const_operand_case("onnx/gather_index_minus_100.onnx", "Gather", (int64_t[]){-100}, 1, AEND,
                       "node 'op1' (Gather): index -100 out of range for dimension 2");
    const_operand_case("onnx/gather_axis_4.onnx", "Gather", (int64_t[]){0}, 1,
                       ox_attr_int("axis", 4),
                       "node 'op1' (Gather): axis 4 out of range for rank 4");
    const_operand_case("onnx/reshape_two_minus1.onnx", "Reshape", (int64_t[]){-1, -1}, 2, AEND,
                       "node 'op1' (Reshape): shape has more than one -1");
    const_operand_case("onnx/reshape_count_mismatch.onnx", "Reshape", (int64_t[]){7, 11}, 2, AEND,
                       "node 'op1' (Reshape): shape holds 77 elements, input has 120");
    const_operand_case("onnx/reshape_negative.onnx", "Reshape", (int64_t[]){-5, 24}, 2, AEND,
                       "node 'op1' (Reshape): shape[0] = -5 is invalid");
    const_operand_case("onnx/reshape_huge.onnx", "Reshape", (int64_t[]){1LL << 40, 1LL << 40, 0}, 3,
                       AEND, "node 'op1' (Reshape): shape [1099511627776, 1099511627776, 0] "
                             "has more than");
    const_operand_case(
        "onnx/expand_incompatible.onnx", "Expand", (int64_t[]){7, 3, 4, 5}, 4, AEND,
        "node 'op1' (Expand): input shape does not broadcast to the requested shape");
    const_operand_case("onnx/tile_negative.onnx", "Tile", (int64_t[]){1, -2, 1, 1}, 4, AEND,
                       "node 'op1' (Tile): negative repeat -2");
    const_operand_case("onnx/tile_wrong_rank.onnx", "Tile", (int64_t[]){2, 2}, 2, AEND,
                       "node 'op1' (Tile): repeats has 2 entries for rank 4");
    const_operand_case("onnx/tile_overflow.onnx", "Tile", (int64_t[]){1, 1LL << 62, 1, 1}, 4, AEND,
                       "node 'op1' (Tile): repeats [1, 4611686018427387904, 1, 1]: axis 1 of "
                       "3 x 4611686018427387904 elements overflows int64");
    const_operand_case("onnx/unsqueeze_axis_9.onnx", "Unsqueeze", (int64_t[]){9}, 1, AEND,
                       "node 'op1' (Unsqueeze): axis 9 out of range for rank 5");
    const_operand_case("onnx/squeeze_non_one.onnx", "Squeeze", (int64_t[]){1}, 1, AEND,
                       "node 'op1' (Squeeze): cannot squeeze axis 1 of size 3");
    const_operand_case("onnx/pad_wrong_count.onnx", "Pad", (int64_t[]){1, 1, 1}, 3, AEND,
                       "node 'op1' (Pad): pads has 3 entries, expected 8");
    const_operand_case("onnx/pad_negative_past.onnx", "Pad", (int64_t[]){0, 0, 0, -9, 0, 0, 0, 0},
                       8, AEND, "node 'op1' (Pad): pads remove more than the whole axis 3");
    const_operand_case(
        "onnx/split_sizes_mismatch.onnx", "Split", (int64_t[]){1, 1}, 2, ox_attr_int("axis", 1),
        "node 'op1' (Split): split sizes (2 entries, sum 2) do not match 1 outputs and dim 3");
    const_operand_case("onnx/reducesum_axes_range.onnx", "ReduceSum", (int64_t[]){4}, 1, AEND,
                       "node 'op1' (ReduceSum): axis 4 out of range for rank 4");
}

/* Slices with bad steps or axes. */
static void slices(void)
{
    /* Slice with a zero step */
    Buf g = {0};
    g_node(&g, "Slice", "slice1", IN("x", "starts", "ends", "axes", "steps"), IN("y"), AEND);
    g_init_i64(&g, "starts", (int64_t[]){0}, 1);
    g_init_i64(&g, "ends", (int64_t[]){3}, 1);
    g_init_i64(&g, "axes", (int64_t[]){1}, 1);
    g_init_i64(&g, "steps", (int64_t[]){0}, 1);
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 3, 4, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/slice_step_zero.onnx", &g, 13, "node 'slice1' (Slice): slice step is zero");
    g = (Buf){0};
    g_node(&g, "Slice", "slice1", IN("x", "starts", "ends", "axes"), IN("y"), AEND);
    g_init_i64(&g, "starts", (int64_t[]){0}, 1);
    g_init_i64(&g, "ends", (int64_t[]){3}, 1);
    g_init_i64(&g, "axes", (int64_t[]){6}, 1);
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 3, 4, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/slice_axis_6.onnx", &g, 13,
           "node 'slice1' (Slice): axis 6 out of range for rank 4");
}

/* Models that make fuzz (the onnx target) found aborting or overflowing the compiler. */
static void found_fuzz(void)
{
    /* Unique whose one input is left out (an empty name) */
    Buf g = {0};
    g_node(&g, "Unique", "uniq1", IN(""), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(6));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/unique_no_input.onnx", &g, 13, "node 'uniq1' (Unique)");
    /* a 4-D Attention whose K has no heads (found by make fuzz: the check that Q's
       heads are a multiple of K's divided by zero) */
    g = (Buf){0};
    g_node(&g, "Attention", "attn1", IN("q", "k", "v"), IN("y"), AEND);
    g_input(&g, "q", ONNX_FLOAT, DIMS(2, 10, 1, 8));
    g_input(&g, "k", ONNX_FLOAT, DIMS(2, 0, 8, 8));
    g_input(&g, "v", ONNX_FLOAT, DIMS(2, 2, 8, 8));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/attention_zero_heads.onnx", &g, 23, "node 'attn1' (Attention): 4-D Q, K and V need at least one head");
    /* AffineGrid with its size input left out */
    g = (Buf){0};
    g_node(&g, "AffineGrid", "grid1", IN("theta", ""), IN("y"), AEND);
    g_input(&g, "theta", ONNX_FLOAT, DIMS(1, 2, 3));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/affinegrid_no_size.onnx", &g, 20, "node 'grid1' (AffineGrid)");
    /* a Slice whose starts come at run time as a 2x2 matrix, not one integer per axis */
    g = (Buf){0};
    g_node(&g, "Slice", "slice1", IN("x", "starts", "ends"), IN("y"), AEND);
    g_input(&g, "starts", ONNX_INT64, DIMS(2, 2));
    g_init_i64(&g, "ends", (int64_t[]){3, 3}, 2);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/slice_runtime_starts_matrix.onnx", &g, 13, "node 'slice1' (Slice)");
    /* a valid Slice with steps as large as int64 allows: one element per axis, and no
       stride times step overflow while its view is composed */
    g = (Buf){0};
    g_node(&g, "Slice", "slice1", IN("x", "starts", "ends", "axes", "steps"), IN("s"), AEND);
    g_init_i64(&g, "starts", (int64_t[]){1, 2}, 2);
    g_init_i64(&g, "ends", (int64_t[]){INT64_MAX, INT64_MAX}, 2);
    g_init_i64(&g, "axes", (int64_t[]){0, 1}, 2);
    g_init_i64(&g, "steps", (int64_t[]){INT64_MAX, INT64_MAX - 1}, 2);
    g_node(&g, "Relu", "relu1", IN("s"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4, 5));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1, 1));
    Buf m = ox_model(13, &g);
    gen_case("onnx/slice_step_huge.onnx", m.p, m.n, "spyrec", 0, "", NULL);
    buf_free(&m);
    /* a ReduceSum over runtime axes of an empty tensor, whose candidates cannot be
       combined: the error is reported, not followed by an assertion on its stand-in */
    g = (Buf){0};
    g_node(&g, "ReduceSum", "rsum1", IN("x", "axes"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(0, 0, 4));
    g_input(&g, "axes", ONNX_INT64, DIMS(1));
    g_output(&g, "y", ONNX_FLOAT, DIMS(2, 1, 4));
    g_case("onnx/reduce_runtime_axes_empty.onnx", &g, 18, "node 'rsum1' (ReduceSum)");
    /* a Resize to runtime sizes whose declared output (the bound) has a 0: refused, not
       an assertion on the empty gather; and one with an unknown nearest_mode */
    for (int k = 0; k < 2; k++) {
        g = (Buf){0};
        g_node(&g, "Resize", "rs1", IN("x", "", "", "sizes"), IN("y"),
               ox_attr_str("mode", "nearest"), ox_attr_str("nearest_mode", k ? "=loor" : "floor"),
               AEND);
        g_input(&g, "x", ONNX_FLOAT, DIMS(1, 1, 4, 4));
        g_input(&g, "sizes", ONNX_INT64, DIMS(4));
        g_output(&g, "y", ONNX_FLOAT, DIMS(1, 1, 0, 8));
        g_case(k ? "onnx/resize_nearest_mode_unknown.onnx" : "onnx/resize_runtime_bound_empty.onnx",
               &g, 19, k ? "unknown nearest_mode '=loor'" : "a bound that holds no element");
    }
    /* a linear Resize whose last scale (1.18e-38) leaves that axis empty: it compiles,
       not an assertion on the gather of its empty rows (whose strides count the 0 as 1) */
    g = (Buf){0};
    Buf sc = ox_tensor("scales", ONNX_FLOAT, DIMS(4), (float[]){1, 64, 3, 1.1777544e-38f}, 16);
    pb_msg(&g, 5, &sc);
    g_node(&g, "Resize", "rs1", IN("x", "", "scales"), IN("y"), ox_attr_str("mode", "linear"),
           AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(1, 2, 5, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    Buf m2 = ox_model(13, &g);
    gen_case("onnx/resize_linear_scale_empty.onnx", m2.p, m2.n, "spyrec", 0, "", NULL);
    buf_free(&m2);
}

/* Operands whose shapes, dtypes or counts do not fit their operator. */
static void mismatches(void)
{
    Buf g = {0};
    g_node(&g, "MatMul", "mm1", IN("x", "w"), IN("y"), AEND);
    g_init_f32(&g, "w", DIMS(7, 3));
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 5));
    g_output(&g, "y", ONNX_FLOAT, DIMS(2, 3));
    g_case("onnx/matmul_mismatch.onnx", &g, 13,
           "node 'mm1' (MatMul): inner dimensions differ (5 and 7)");
    g = (Buf){0};
    g_node(&g, "Add", "add1", IN("x", "w"), IN("y"), AEND);
    g_init_f32(&g, "w", DIMS(3, 7));
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/add_not_broadcastable.onnx", &g, 13,
           "node 'add1' (Add): shapes f32[2,5] and f32[3,7] cannot be broadcast");
    g = (Buf){0};
    g_node(&g, "Add", "add1", IN("x", "w"), IN("y"), AEND);
    g_init_i64(&g, "w", (int64_t[]){1, 2, 3, 4, 5}, 5);
    g_input(&g, "x", ONNX_FLOAT, DIMS(2, 5));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/add_dtype_mismatch.onnx", &g, 13,
           "node 'add1' (Add): input dtypes differ (f32 and i64)");
    g = (Buf){0};
    g_node(&g, "Conv", "conv1", IN("x", "W"), IN("y"), AEND);
    g_init_f32(&g, "W", DIMS(2, 3, 3));
    g_input(&g, "x", ONNX_FLOAT, DIMS(1, 1, 8, 8));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/conv_weight_rank.onnx", &g, 13,
           "node 'conv1' (Conv): input rank 4 and weight rank 3 must be equal and >= 3");
    g = (Buf){0};
    g_node(&g, "Conv", "conv1", IN("x", "W"), IN("y"), AEND);
    g_init_f32(&g, "W", DIMS(2, 4, 3, 3));
    g_input(&g, "x", ONNX_FLOAT, DIMS(1, 1, 8, 8));
    g_output(&g, "y", ONNX_FLOAT, NULL, -1);
    g_case("onnx/conv_channel_mismatch.onnx", &g, 13,
           "node 'conv1' (Conv): group 1 does not match input channels 1 and weight shape");
    g = (Buf){0};
    g_node(&g, "Relu", "relu1", IN("x"), IN("y", "z"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/relu_two_outputs.onnx", &g, 13, "node 'relu1' (Relu)");
    g = (Buf){0};
    g_node(&g, "Add", "add1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/add_one_input.onnx", &g, 13, "node 'add1' (Add): missing required input 1");
    /* integer division by zero between constants (folded at compile time) */
    g = (Buf){0};
    Buf a = ox_tensor("a", ONNX_INT32, DIMS(2), (int32_t[]){7, 8}, 8);
    pb_msg(&g, 5, &a);
    Buf b = ox_tensor("b", ONNX_INT32, DIMS(2), (int32_t[]){1, 0}, 8);
    pb_msg(&g, 5, &b);
    g_node(&g, "Div", "div1", IN("a", "b"), IN("q"), AEND);
    g_node(&g, "Add", "add1", IN("x", "q"), IN("y"), AEND);
    g_input(&g, "x", ONNX_INT32, DIMS(2));
    g_output(&g, "y", ONNX_INT32, DIMS(2));
    Buf m = ox_model(13, &g); /* compiles: the run reports the division */
    gen_case("onnx/const_int_div_zero.onnx", m.p, m.n, "spyrec", 0, "", NULL);
    buf_free(&m);
}

/* Models the fuzzers turned up, and sizes only codegen sees. */
static void found(void)
{
    /* Shape with start > end: an empty int64 constant reaches codegen (no bytes) */
    Buf g = {0};
    g_node(&g, "Shape", "shape1", IN("x"), IN("y"), ox_attr_int("start", 2), ox_attr_int("end", 1),
           AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(3, 4, 5));
    g_output(&g, "y", ONNX_INT64, DIMS(0));
    Buf m = ox_model(15, &g);
    gen_case("onnx/shape_empty_slice.onnx", m.p, m.n, "spyrec", 0, "", NULL);
    buf_free(&m);
    /* Pad to a 10 TB output: must be refused, not emitted (or emitted without bound) */
    const_operand_case("onnx/pad_10tb_output.onnx", "Pad",
                       (int64_t[]){0, 0, 134217728, -9, 0, 0, 0, 3327}, 8, AEND,
                       "node 'op1' (Pad): result 'y' needs 10704132562464 bytes");
    /* Pad whose pads of one axis sum past int64 (found by make fuzz: the check that
       pads leave a non-negative size overflowed), and a reflect Pad whose index table
       would pass the compile-time budget */
    const_operand_case("onnx/pad_sum_overflow.onnx", "Pad",
                       (int64_t[]){0, 0, INT64_MAX - 8, 0, 0, 0, 3098476543630901248, 0}, 8,
                       AEND, "node 'op1' (Pad): pads of axis 2");
    const_operand_case("onnx/pad_reflect_huge.onnx", "Pad",
                       (int64_t[]){0, 0, 0, 1LL << 50, 0, 0, 0, 0}, 8,
                       ox_attr_str("mode", "reflect"),
                       "node 'op1' (Pad): the index table of a padded axis");
    /* an int64 constant that int32 (the device type) cannot hold */
    g = (Buf){0};
    g_init_i64(&g, "c", (const int64_t[]){1LL << 40, 5}, 2);
    g_node(&g, "Add", "add1", IN("x", "c"), IN("y"), AEND);
    g_input(&g, "x", ONNX_INT64, DIMS(2));
    g_output(&g, "y", ONNX_INT64, DIMS(2));
    g_case("onnx/int64_const_past_int32.onnx", &g, 13,
           "constant 'c' holds 1099511627776 at element 0, outside the int32 range");
    found_fuzz();
}

void gen_onnx_ops(void)
{
    opsets();
    attributes();
    operands();
    slices();
    mismatches();
    found();
}
