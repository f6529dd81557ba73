/* gen_input.c: run-time input files (TensorProto .pb and NumPy .npy) that are wrong
 * for the reference bundles: dtype, rank, shape, too few bytes, broken encodings,
 * Gather indices out of range, int64 values outside int32, integer division by zero.
 * Each case runs spyrun on a valid bundle with the file as one input. */
#include <stdlib.h>
#include <string.h>

#include "gen.h"

#define RELU "sbin/ok/relu.sbin --input x={}"
#define EMBED "sbin/ok/embed.sbin --input ids={}"
#define DIV "sbin/ok/div.sbin --input a=input/ok/a.pb --input b={}"

/* A TensorProto file image with raw data. */
static Buf pb_tensor(const char *name, int dtype, const int64_t *dims, int rank, const void *raw,
                     size_t n)
{
    return ox_tensor(name, dtype, dims, rank, raw, n);
}

/* A .npy v1 file image with the given header dict text and data. */
static Buf npy(const char *dict, const void *data, size_t n)
{
    Buf b = {0};
    buf_put(&b, "\x93NUMPY\x01\x00", 8);
    size_t hl = strlen(dict) + 1;
    size_t pad = (64 - (10 + hl) % 64) % 64;
    uint16_t len = (uint16_t)(hl + pad);
    buf_put(&b, &len, 2);
    buf_put(&b, dict, strlen(dict));
    for (size_t i = 0; i < pad; i++)
        buf_put(&b, " ", 1);
    buf_put(&b, "\n", 1);
    buf_put(&b, data, n);
    return b;
}

static void put(const char *file, Buf *b, int status, const char *frag, const char *args)
{
    gen_case(file, b->p, b->n, "spyrun", status, frag, args);
    buf_free(b);
}

static void valid_inputs(void)
{
    float x[32];
    for (int i = 0; i < 32; i++)
        x[i] = (float)(i - 16) * 0.5f;
    Buf b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 8), x, sizeof x);
    put("input/ok/x.pb", &b, 0, "y", RELU);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, 3, 9, -1}, 32);
    put("input/ok/ids.pb", &b, 0, "y", EMBED);
    b = pb_tensor("a", ONNX_INT32, DIMS(8), (int32_t[]){7, -7, 8, 9, 100, -100, 1, 0}, 32);
    gen_file("input/ok/a.pb", b.p, b.n);
    buf_free(&b);
    b = pb_tensor("b", ONNX_INT32, DIMS(8), (int32_t[]){2, 2, -3, 9, 7, 7, 1, 5}, 32);
    put("input/ok/b.pb", &b, 0, "q", DIV);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", x, sizeof x);
    put("input/ok/x.npy", &b, 0, "y", RELU);
}

/* Inputs of the reludyn bundle (a bounded symbolic axis 0 of x, 1..4): every size in
 * the bounds runs (the output has that size), one above them is refused. */
static void dynamic_inputs(void)
{
    float x[40];
    for (int i = 0; i < 40; i++)
        x[i] = (float)(i - 8) * 0.25f;
    Buf b = pb_tensor("x", ONNX_FLOAT, DIMS(1, 8), x, 32);
    put("input/ok/x_dyn_1x8.pb", &b, 0, "f32[1,8]", "sbin/ok/reludyn.sbin --input x={}");
    b = pb_tensor("x", ONNX_FLOAT, DIMS(3, 8), x, 96);
    put("input/ok/x_dyn_3x8.pb", &b, 0, "f32[3,8]", "sbin/ok/reludyn.sbin --input x={}");
    b = pb_tensor("x", ONNX_FLOAT, DIMS(1, 8), x, 32);   /* size buckets: the 1..2 one */
    put("input/ok/x_buckets_1x8.pb", &b, 0, "in size bucket 0 of 1 (x 2x8)",
        "sbin/ok/relubuckets.sbin --input x={}");
    b = pb_tensor("x", ONNX_FLOAT, DIMS(3, 8), x, 96);   /* above it: the bounds */
    put("input/ok/x_buckets_3x8.pb", &b, 0, "in the box of its dynamic dimensions' bounds",
        "sbin/ok/relubuckets.sbin --input x={}");
    b = pb_tensor("x", ONNX_FLOAT, DIMS(5, 8), x, 160);
    put("input/x_dyn_5x8.pb", &b, 2, "the file holds f32[5,8], the model wants f32[4,8]",
        "sbin/ok/reludyn.sbin --input x={}");
}

static void wrong_for_bundle(void)
{
    float x[40] = {0};
    Buf b = pb_tensor("x", ONNX_INT32, DIMS(4, 8), x, 128);
    put("input/x_int32.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", 11, DIMS(4, 8), (double[32]){0}, 256);
    put("input/x_double.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(32), x, 128);
    put("input/x_rank1.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(1, 4, 8), x, 128);
    put("input/x_rank3.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 9), x, 144);
    put("input/x_shape_4x9.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(8, 4), x, 128);
    put("input/x_shape_8x4.pb", &b, 2, "'x'", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(0, 8), x, 0);
    put("input/x_empty.pb", &b, 2, "'x'", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 7), }", x, 112);
    put("input/x_shape.npy", &b, 2, "'x'", RELU);
    b = npy("{'descr': '<i4', 'fortran_order': False, 'shape': (4, 8), }", x, 128);
    put("input/x_int32.npy", &b, 2, "'x'", RELU);
    /* an empty tensor's other extents may be any int64 (as in a .pb): INT64_MAX is
     * read (then refused for the bundle's shape), one past it is not (fuzzing found the
     * reader refusing INT64_MAX, so a .pb's tensor could not be read back as .npy) */
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 0, 9223372036854775807), }",
            x, 0);
    put("input/x_empty_huge.npy", &b, 2, "the file holds f32[1,0,9223372036854775807]", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 0, 9223372036854775808), }",
            x, 0);
    put("input/x_empty_too_huge.npy", &b, 2, "shape entry too large", RELU);
    b = pb_tensor("ids", ONNX_FLOAT, DIMS(4), x, 16);
    put("input/ids_float.pb", &b, 2, "'ids'", EMBED);
    b = pb_tensor("ids", ONNX_INT32, DIMS(4), (int32_t[]){0, 1, 2, 3}, 16);
    put("input/ids_int32.pb", &b, 2, "'ids'", EMBED);
}

static void broken_files(void)
{
    float x[40] = {0};
    Buf b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 8), x, 100);
    put("input/x_raw_short.pb", &b, 2, "tensor 'x': raw_data has 100 bytes, expected 128", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 8), x, 128);
    b.n = 60;
    put("input/x_truncated.pb", &b, 2, "offset", RELU);
    b = pb_tensor("x", 99, DIMS(4, 8), x, 128);
    put("input/x_dtype_99.pb", &b, 2, "tensor 'x': code 99 tensors are not supported", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(4, -8), x, 128);
    put("input/x_dim_negative.pb", &b, 2, "tensor 'x': negative dimension -8 at axis 1", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(1, 1, 1, 1, 1, 1, 1, 4, 8), x, 128);
    put("input/x_rank9.pb", &b, 2, "tensor 'x': rank 9 exceeds", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(1LL << 62, 1LL << 62), x, 128);
    put("input/x_dims_overflow.pb", &b, 2, "tensor 'x': dimensions overflow", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 8), x, 128);
    for (int i = 0; i < 32; i++)
        pb_float(&b, 4, 1.0f);
    put("input/x_two_fields.pb", &b, 2, "tensor 'x': has two data fields at once", RELU);
    b = pb_tensor("x", ONNX_FLOAT, DIMS(4, 8), NULL, 0);
    Buf e = {0};
    pb_str(&e, 1, "location");
    pb_str(&e, 2, "ok/x.pb");
    pb_msg(&b, 13, &e);
    pb_int(&b, 14, 1);
    put("input/x_external.pb", &b, 2, "tensor 'x'", RELU);
    b = (Buf){0};
    put("input/x_zero_bytes.pb", &b, 2, "data type is missing", RELU);
    static const uint8_t junk[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                   0xff, 0xff, 0xff, 0xff, 0xff};
    b = (Buf){0};
    buf_put(&b, junk, sizeof junk);
    put("input/x_junk.pb", &b, 2, "offset 0", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': True, 'shape': (4, 8), }", x, 128);
    put("input/x_fortran.npy", &b, 2, "Fortran-order", RELU);
    b = npy("{'descr': '<c8', 'fortran_order': False, 'shape': (4, 8), }", x, 128);
    put("input/x_complex.npy", &b, 2, ".npy dtype '<c8' is not supported", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", x, 100);
    put("input/x_data_short.npy", &b, 2, ".npy data has 100 bytes, expected 128", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, -8), }", x, 128);
    put("input/x_shape_negative.npy", &b, 2, ".npy header", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8", x, 128);
    put("input/x_header_cut.npy", &b, 2, ".npy header", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, "
            "99999999999), }",
            x, 128);
    put("input/x_shape_huge.npy", &b, 2, "dimensions overflow", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", x, 128);
    b.p[6] = 9;
    put("input/x_version_9.npy", &b, 2, "offset 6: unsupported .npy format version 9", RELU);
    b = npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4, 8), }", x, 128);
    b.p[8] = 0xff, b.p[9] = 0x7f;
    put("input/x_header_len.npy", &b, 2, "offset 8: .npy header length", RELU);
    b = (Buf){0};
    buf_put(&b, "\x93NUMPY\x01", 7);
    put("input/x_preamble.npy", &b, 2, "truncated .npy preamble", RELU);
}

static void data_errors(void)
{
    Buf b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, 1, 10, 2}, 32);
    put("input/ids_index_10.pb", &b, 2, "index 10 out of range [-10, 10)", EMBED);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, -11, 1, 2}, 32);
    put("input/ids_index_minus_11.pb", &b, 2, "index -11 out of range", EMBED);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, 1, 2, 2147483647}, 32);
    put("input/ids_index_int32_max.pb", &b, 2, "index 2147483647 out of range", EMBED);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, 1, 1LL << 40, 2}, 32);
    put("input/ids_int64_2e40.pb", &b, 2, "input 'ids' element 2: value 1099511627776 does not fit",
        EMBED);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){INT64_MIN, 0, 0, 0}, 32);
    put("input/ids_int64_min.pb", &b, 2, "input 'ids' element 0", EMBED);
    b = pb_tensor("ids", ONNX_INT64, DIMS(4), (int64_t[]){0, 0, 0, 2147483648LL}, 32);
    put("input/ids_int32_max_plus1.pb", &b, 2, "input 'ids' element 3: value 2147483648", EMBED);
    b = pb_tensor("b", ONNX_INT32, DIMS(8), (int32_t[]){1, 1, 1, 0, 1, 1, 1, 1}, 32);
    put("input/b_zero.pb", &b, 2, "integer division by zero", DIV);
}

void gen_inputs(void)
{
    valid_inputs();
    dynamic_inputs();
    wrong_for_bundle();
    broken_files();
    data_errors();
}
