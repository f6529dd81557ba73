/* gen_onnx_graph.c: ONNX files that decode but describe bad tensors, types or graph
 * structure: external data escaping its folder, raw_data size mismatches, two data
 * fields, bad dims and dtypes, missing type information, cycles, duplicate or missing
 * definitions, and sizes that only overflow later (huge shapes, gigabyte folds). */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

/* TensorProto W[2,1,3,3] float with external data entries (key, value pairs). */
static Buf ext_tensor(const char *const *kv)
{
    static const int64_t wd[] = {2, 1, 3, 3};
    Buf t = ox_tensor("W", ONNX_FLOAT, wd, 4, NULL, 0);
    for (; kv[0]; kv += 2) {
        Buf e = {0};
        pb_str(&e, 1, kv[0]);
        pb_str(&e, 2, kv[1]);
        pb_msg(&t, 13, &e);
    }
    pb_int(&t, 14, 1); /* data_location = EXTERNAL */
    return t;
}

/* x -> Conv(W) -> y with W given as the tensor t (consumed). */
static Buf conv_graph_with(Buf *t)
{
    Buf g = {0};
    g_node(&g, "Conv", "conv1", IN("x", "W"), IN("y"), AEND);
    pb_msg(&g, 5, t);
    g_input(&g, "x", ONNX_FLOAT, DIMS(1, 1, 8, 8));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1, 2, 6, 6));
    return g;
}

static void ext_case(const char *file, const char *const *kv, const char *frag)
{
    Buf t = ext_tensor(kv);
    Buf g = conv_graph_with(&t);
    g_case(file, &g, 13, frag);
}

static void external_data(void)
{
    float w[18];
    for (int i = 0; i < 18; i++)
        w[i] = 0.125f * (float)i;
    gen_file("onnx/ext/w.bin", w, sizeof w);
    gen_symlink("onnx/ext/link_out.bin", "/etc/passwd");
    gen_symlink("onnx/ext/link_up.bin", "../valid_base.onnx");
    ext_case("onnx/ext/ext_dotdot.onnx", IN("location", "../trunc_0.onnx"),
             "tensor 'W': external data location '../trunc_0.onnx' escapes the model's folder");
    ext_case("onnx/ext/ext_a_dotdot.onnx", IN("location", "a/../../w.bin"),
             "tensor 'W': external data location 'a/../../w.bin' escapes");
    ext_case("onnx/ext/ext_absolute.onnx", IN("location", "/etc/passwd"),
             "tensor 'W': external data location '/etc/passwd' escapes");
    ext_case("onnx/ext/ext_symlink_out.onnx", IN("location", "link_out.bin"),
             "tensor 'W': external data location 'link_out.bin' resolves outside");
    ext_case("onnx/ext/ext_symlink_up.onnx", IN("location", "link_up.bin"),
             "tensor 'W': external data location 'link_up.bin' resolves outside");
    ext_case("onnx/ext/ext_offset_overflow.onnx",
             IN("location", "w.bin", "offset", "18446744073709551615", "length", "72"),
             "tensor 'W': external data offset 18446744073709551615 + length 72 overflows");
    ext_case("onnx/ext/ext_past_end.onnx", IN("location", "w.bin", "offset", "64", "length", "72"),
             "tensor 'W': external data [64, +72) runs past the end of 'w.bin'");
    ext_case("onnx/ext/ext_length_mismatch.onnx",
             IN("location", "w.bin", "offset", "0", "length", "36"),
             "tensor 'W': external data has 36 bytes, expected 72");
    ext_case("onnx/ext/ext_missing_file.onnx", IN("location", "nope.bin"),
             "tensor 'W': external data file 'nope.bin'");
    ext_case("onnx/ext/ext_negative_offset.onnx", IN("location", "w.bin", "offset", "-8"),
             "tensor 'W': external data offset '-8' is not a non-negative integer");
    ext_case("onnx/ext/ext_no_location.onnx", IN("length", "72"),
             "tensor 'W': external data without a 'location'");
    /* a huge shape backed by the small file: refused by size, not by allocation */
    static const int64_t huge[] = {1 << 20, 1 << 20, 1, 3};
    Buf t = ox_tensor("W", ONNX_FLOAT, huge, 4, NULL, 0);
    Buf e = {0};
    pb_str(&e, 1, "location");
    pb_str(&e, 2, "w.bin");
    pb_msg(&t, 13, &e);
    pb_int(&t, 14, 1);
    Buf g = conv_graph_with(&t);
    g_case("onnx/ext/ext_huge_shape.onnx", &g, 13,
           "tensor 'W': external data has 72 bytes, expected 13194139533312");
}

/* A graph using initializer tensor t (consumed) as W of a Conv. */
static void tensor_case(const char *file, Buf *t, const char *frag)
{
    Buf g = conv_graph_with(t);
    g_case(file, &g, 13, frag);
}

static void tensors(void)
{
    static const int64_t wd[] = {2, 1, 3, 3};
    float w[19] = {0};
    Buf t = ox_tensor("W", ONNX_FLOAT, wd, 4, w, 71);
    tensor_case("onnx/raw_size_short.onnx", &t, "tensor 'W': raw_data has 71 bytes, expected 72");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, w, 76);
    tensor_case("onnx/raw_size_long.onnx", &t, "tensor 'W': raw_data has 76 bytes, expected 72");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, w, 72);
    for (int i = 0; i < 18; i++)
        pb_float(&t, 4, 1.0f);
    tensor_case("onnx/two_data_fields.onnx", &t,
                "tensor 'W': has two data fields at once (raw_data and float_data)");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, NULL, 0);
    for (int i = 0; i < 17; i++)
        pb_float(&t, 4, 1.0f);
    tensor_case("onnx/float_data_count.onnx", &t,
                "tensor 'W': float_data has 17 elements, expected 18");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, NULL, 0);
    for (int i = 0; i < 18; i++)
        pb_int(&t, 7, 1);
    tensor_case("onnx/int64_data_for_float.onnx", &t,
                "tensor 'W': int64_data cannot hold f32 elements");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, w, 72);
    pb_int(&t, 14, 1);
    tensor_case("onnx/raw_and_external.onnx", &t, "tensor 'W': has two data fields at once");
    t = ox_tensor("W", ONNX_FLOAT, (const int64_t[]){2, -1, 3, 3}, 4, w, 72);
    tensor_case("onnx/dims_negative.onnx", &t, "tensor 'W': negative dimension -1 at axis 1");
    t = ox_tensor("W", ONNX_FLOAT, (const int64_t[]){1LL << 40, 1LL << 40, 3, 3}, 4, w, 72);
    tensor_case("onnx/dims_overflow.onnx", &t, "tensor 'W': dimensions overflow");
    t = ox_tensor("W", ONNX_FLOAT, (const int64_t[]){1LL << 31, 1LL << 31, 1 << 30, 1}, 4, w, 72);
    tensor_case("onnx/dims_overflow_bytes.onnx", &t, "tensor 'W'");
    t = ox_tensor("W", ONNX_FLOAT, (const int64_t[]){2, 1, 3, 3, 1, 1, 1, 1, 1}, 9, w, 72);
    tensor_case("onnx/rank_9_initializer.onnx", &t,
                "tensor 'W': rank 9 exceeds the supported maximum of 8");
    t = ox_tensor("W", ONNX_FLOAT, (const int64_t[]){100000, 100000, 3, 3}, 4, NULL, 0);
    tensor_case("onnx/huge_shape_no_data.onnx", &t,
                "tensor 'W': has no data for its 90000000000 elements");
    t = ox_tensor("W", 99, wd, 4, w, 72);
    tensor_case("onnx/dtype_99.onnx", &t, "tensor 'W': code 99 tensors are not supported");
    t = ox_tensor("W", 0, wd, 4, w, 72);
    tensor_case("onnx/dtype_undefined.onnx", &t, "tensor 'W': data type is missing");
    t = ox_tensor("W", 14, wd, 4, w, 72);
    tensor_case("onnx/dtype_complex64.onnx", &t, "tensor 'W': complex64 tensors are not supported");
    t = ox_tensor("W", 8, wd, 4, NULL, 0);
    tensor_case("onnx/dtype_string.onnx", &t, "tensor 'W': string tensors are not supported");
    t = ox_tensor("W", ONNX_FLOAT, wd, 4, w, 72);
    Buf seg = {0};
    pb_int(&seg, 1, 0);
    pb_int(&seg, 2, 18);
    pb_msg(&t, 3, &seg);
    tensor_case("onnx/segmented_tensor.onnx", &t, "tensor 'W': segmented tensors");
    t = ox_tensor("", ONNX_FLOAT, wd, 4, w, 72);
    tensor_case("onnx/initializer_no_name.onnx", &t, "initializer #0 has no name");
}

/* x (given type) -> Relu -> y. */
static void input_case(const char *file, Buf *x, const char *frag)
{
    Buf g = {0};
    g_node(&g, "Relu", "relu1", IN("x"), IN("y"), AEND);
    pb_msg(&g, 11, x);
    g_output(&g, "y", ONNX_FLOAT, DIMS(2, 3));
    g_case(file, &g, 13, frag);
}

static void types(void)
{
    Buf x = ox_value("x", 99, DIMS(2, 3));
    input_case("onnx/input_dtype_99.onnx", &x, "input 'x': unsupported dtype code 99");
    x = ox_value("x", 0, DIMS(2, 3));
    input_case("onnx/input_no_elem_type.onnx", &x, "input 'x' has no element type");
    x = ox_value("x", 8, DIMS(2, 3));
    input_case("onnx/input_string.onnx", &x, "input 'x': unsupported dtype string");
    x = ox_value("x", ONNX_FLOAT, NULL, -1);
    input_case("onnx/input_unknown_rank.onnx", &x, "input 'x' has an unknown rank");
    x = (Buf){0};
    pb_str(&x, 1, "x");
    input_case("onnx/input_no_type.onnx", &x, "input 'x' has no type information");
    x = ox_value("x", ONNX_FLOAT, DIMS(2, -3));
    input_case("onnx/input_negative_dim.onnx", &x, "input 'x': negative dimension -3 at axis 1");
    x = ox_value("x", ONNX_FLOAT, DIMS(1, 1, 1, 1, 1, 1, 1, 1, 2, 3));
    input_case("onnx/input_rank_10.onnx", &x, "input 'x': rank 10 exceeds");
    x = ox_value("x", ONNX_FLOAT, DIMS(1LL << 62, 1LL << 62));
    input_case("onnx/input_dims_overflow.onnx", &x, "input 'x': dimensions overflow");
    /* dynamic dimension */
    Buf d = {0}, shape = {0}, tt = {0}, ty = {0};
    pb_str(&d, 2, "batch");
    pb_msg(&shape, 1, &d);
    pb_int(&tt, 1, ONNX_FLOAT);
    pb_msg(&tt, 2, &shape);
    pb_msg(&ty, 1, &tt);
    x = (Buf){0};
    pb_str(&x, 1, "x");
    pb_msg(&x, 2, &ty);
    input_case("onnx/input_dynamic_dim.onnx", &x,
               "dynamic dimension 'batch' (axis 0) of input 'x'");
    /* a sequence type */
    tt = (Buf){0};
    Buf elem = {0}, seq = {0};
    pb_int(&tt, 1, ONNX_FLOAT);
    pb_msg(&elem, 1, &tt);
    pb_msg(&seq, 1, &elem);
    ty = (Buf){0};
    pb_msg(&ty, 4, &seq);
    x = (Buf){0};
    pb_str(&x, 1, "x");
    pb_msg(&x, 2, &ty);
    input_case("onnx/input_sequence.onnx", &x, "sequence input 'x' has no fixed structure");
    /* huge input shape: valid types, but no device can hold it */
    x = ox_value("x", ONNX_FLOAT, DIMS(100000, 100000, 100000));
    Buf g = {0};
    g_node(&g, "Relu", "relu1", IN("x"), IN("y"), AEND);
    pb_msg(&g, 11, &x);
    g_output(&g, "y", ONNX_FLOAT, DIMS(100000, 100000, 100000));
    g_case("onnx/input_huge_shape.onnx", &g, 13, "input 'x' needs 4000000000000000 bytes");
}

static void structure(void)
{
    Buf g = {0};
    g_node(&g, "Relu", "a", IN("t2"), IN("t1"), AEND);
    g_node(&g, "Relu", "b", IN("t1"), IN("t2"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "t2", ONNX_FLOAT, DIMS(4));
    g_case("onnx/cycle.onnx", &g, 13,
           "node 'a' (Relu): input 't2' is used before the node that produces it");
    g = (Buf){0};
    g_node(&g, "Relu", "second", IN("t1"), IN("y"), AEND);
    g_node(&g, "Relu", "first", IN("x"), IN("t1"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/use_before_def.onnx", &g, 13, "node 'second' (Relu): input 't1' is used before");
    g = (Buf){0};
    g_node(&g, "Add", "add1", IN("x", "ghost"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/input_never_produced.onnx", &g, 13,
           "node 'add1' (Add): input 'ghost' is not produced by any node");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_node(&g, "Neg", "r2", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/duplicate_output.onnx", &g, 13, "node 'r2' (Neg): output 'y' is already defined");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("x"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "x", ONNX_FLOAT, DIMS(4));
    g_case("onnx/output_redefines_input.onnx", &g, 13,
           "node 'r1' (Relu): output 'x' is already defined");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_output(&g, "z", ONNX_FLOAT, DIMS(4));
    g_case("onnx/output_never_produced.onnx", &g, 13, "graph output 'z' is never produced");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/output_listed_twice.onnx", &g, 13, "graph output 'y' is listed twice");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_case("onnx/no_outputs.onnx", &g, 13, "the graph has no outputs");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/input_listed_twice.onnx", &g, 13, "graph input 'x' is listed twice");
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_init_f32(&g, "W", DIMS(4));
    g_init_f32(&g, "W", DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/initializer_twice.onnx", &g, 13, "'W' is defined twice");
    g = (Buf){0};
    g_node(&g, "", "noop", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    g_case("onnx/node_no_op_type.onnx", &g, 13, "node 'noop' (?): node has no op_type");
    Buf m = {0};
    pb_int(&m, 1, 8);
    Buf o = ox_opset("", 13);
    pb_msg(&m, 8, &o);
    gen_case("onnx/no_graph.onnx", m.p, m.n, "spyrec", 2, "the model has no graph", NULL);
    buf_free(&m);
    g = (Buf){0};
    g_node(&g, "Relu", "r1", IN("x"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(4));
    g_output(&g, "y", ONNX_FLOAT, DIMS(4));
    Buf sp = {0}, vals = ox_tensor("S", ONNX_FLOAT, DIMS(1), (float[]){1}, 4);
    pb_msg(&sp, 1, &vals);
    pb_msg(&g, 15, &sp);
    g_case("onnx/sparse_initializer.onnx", &g, 13, "sparse initializer 'S' is not supported");
}

/* A model that must compile (bounded time and memory) although it looks huge. */
static void g_ok(const char *file, Buf *g)
{
    Buf m = ox_model(13, g);
    gen_case(file, m.p, m.n, "spyrec", 0, "", NULL);
    buf_free(&m);
}

/* Nodes whose constant folding would create gigabytes: either the compiler avoids
 * materialising the constant (reductions of broadcasts) or it must refuse cleanly. */
static void big_folds(void)
{
    Buf g = {0};
    g_init_i64(&g, "shape", (const int64_t[]){65536, 65536}, 2);
    g_node(&g, "ConstantOfShape", "cos", IN("shape"), IN("big"), AEND);
    g_node(&g, "ReduceSum", "sum", IN("big"), IN("s"), ox_attr_int("keepdims", 0), AEND);
    g_node(&g, "Add", "add", IN("x", "s"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(1));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1));
    g_ok("onnx/fold_constantofshape_16g.onnx", &g);
    g = (Buf){0};
    g_init_f32(&g, "one", DIMS(1));
    g_init_i64(&g, "shape", (const int64_t[]){1 << 20, 1 << 20}, 2);
    g_node(&g, "Expand", "expand", IN("one", "shape"), IN("big"), AEND);
    g_node(&g, "ReduceMax", "max", IN("big"), IN("s"), ox_attr_int("keepdims", 0), AEND);
    g_node(&g, "Add", "add", IN("x", "s"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(1));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1));
    g_ok("onnx/fold_expand_4t.onnx", &g);
    g = (Buf){0};
    g_init_f32(&g, "w", DIMS(4, 4));
    g_init_i64(&g, "reps", (const int64_t[]){100000, 100000}, 2);
    g_node(&g, "Tile", "tile", IN("w", "reps"), IN("big"), AEND);
    g_node(&g, "ReduceMin", "min", IN("big"), IN("s"), ox_attr_int("keepdims", 0), AEND);
    g_node(&g, "Add", "add", IN("x", "s"), IN("y"), AEND);
    g_input(&g, "x", ONNX_FLOAT, DIMS(1));
    g_output(&g, "y", ONNX_FLOAT, DIMS(1));
    g_case("onnx/fold_tile_640g.onnx", &g, 13, "node 'tile' (Tile): result 'big' needs");
}

void gen_onnx_graph(void)
{
    external_data();
    tensors();
    types();
    structure();
    big_folds();
}
