/* test_const_free.c: constants given back while the compiler runs (ir_const_free,
 * ir_arena_free) and their users: the fp8 pass (passes/fp8.c), which drops each
 * DLFloat16 weight once its last matrix product reads the float8 copy instead (a
 * weight two products read goes after the second, one that another node reads stays),
 * and the decomposition of an int8 weight's DequantizeLinear and depth sums
 * (dec_drop_temp), whose folded temporaries go as soon as they are folded, and whose
 * dequantized copy goes once its only reader is an integer product. Small
 * constants (sharing an arena block) and references into the caller's memory (a
 * mapped file's) are never freed. A weight in a mapped model file has its pages
 * dropped from the resident set instead (ir_const_drop_pages), by the fp16 pass once
 * it has made the DLFloat16 copy: the data stays readable, from the file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "dtconv.h"
#include "ir.h"
#include "pass.h"
#include "unit_util.h"

static const IrOrigin O = {"n1", "Test", NULL};

enum { K = 256, N = 512 };                  /* a weight of 256 KiB in DLFloat16 */

/* A DLFloat16 constant [K, N] of small values (in the arena, a block of its own). */
static ValId weight(IrGraph *g, const char *name, uint16_t seed)
{
    IrType t = ut_type(IR_DT_DLF16, 2, (int64_t[]){K, N});
    ValId w = ir_add_const(g, name, &t, NULL);
    uint16_t *d = (uint16_t *)(uintptr_t)ir_val(g, w)->data;
    for (int64_t i = 0; i < (int64_t)K * N; i++)
        d[i] = spy_f32_to_dlf16(0.01f * (float)((i * 7 + seed) % 64 - 32));
    return w;
}

static ValId matmul(IrGraph *g, ValId a, ValId b)
{
    ValId in[2] = {a, b};
    return ir_node(g, ir_add_node(g, IR_OP_MATMUL, in, 2, NULL, 0, &O))->out[0];
}

/* Whether v was given back: no data, every dim 0. */
static bool freed(IrGraph *g, ValId v)
{
    const IrValue *val = ir_val(g, v);
    return !val->data && val->type.rank == 2 && val->type.dims[0] == 0 && val->type.dims[1] == 0;
}

/* A large constant's block goes back to the allocator and out of the graph's byte
 * count; a small one (in a shared block) and a reference stay as they are. */
static void test_free_large_only(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId w = weight(g, "w", 0);
    float small[4] = {1, 2, 3, 4};
    IrType ts = ut_type(IR_DT_F32, 1, (int64_t[]){4});
    ValId s = ir_add_const(g, "s", &ts, small);
    static _Alignas(16) float mapped[65536];     /* 256 KiB the graph does not own */
    IrType tr = ut_type(IR_DT_F32, 1, (int64_t[]){65536});
    ValId r = ir_add_const_ref(g, "r", &tr, mapped);
    size_t before = g->arena_bytes;
    assert_int_equal(ir_const_free(g, w), (size_t)K * N * 2);
    assert_true(freed(g, w));
    assert_true(g->arena_bytes + (size_t)K * N * 2 <= before);
    assert_true(g->arena_bytes == g->arena.bytes);
    assert_int_equal(ir_const_free(g, w), 0);    /* twice: nothing left */
    assert_int_equal(ir_const_free(g, s), 0);
    assert_memory_equal(ir_val(g, s)->data, small, sizeof small);
    assert_int_equal(ir_const_free(g, r), 0);
    assert_ptr_equal(ir_val(g, r)->data, mapped);
    assert_true(ir_verify(g, "test"));
}

/* pass_fp8 on three weights: w1 read by one product, w2 by two (the second after
 * another weight's), w3 by a product and an elementwise node: w1 and w2 are given
 * back (w2 once both of its products read fp8), w3 stays, and the graph verifies
 * with the float8 copies in place. */
static void test_fp8_drops_dlf16_weights(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    IrType tx = ut_type(IR_DT_DLF16, 2, (int64_t[]){4, K});
    ValId x = ir_add_input(g, "x", &tx);
    ValId w1 = weight(g, "w1", 1), w2 = weight(g, "w2", 2), w3 = weight(g, "w3", 3);
    ir_add_output(g, matmul(g, x, w1));
    ir_add_output(g, matmul(g, x, w2));
    ir_add_output(g, matmul(g, x, w3));
    ir_add_output(g, ir_unary(g, IR_UN_NEG, w3, &O));
    ir_add_output(g, matmul(g, x, w2));
    assert_false(ir_failed(g));
    size_t before = g->arena_bytes;
    PassOptions po = {.opt_level = 2, .precision = PASS_PREC_FP8};
    assert_true(pass_fp8(g, &po));
    ir_scratch_reset(g);
    assert_true(freed(g, w1));
    assert_true(freed(g, w2));
    assert_false(freed(g, w3));
    assert_non_null(ir_val(g, w3)->data);
    /* the fp8 copies (w2 quantized once per product) in, two DLFloat16 weights out */
    assert_true(g->arena_bytes + 2 * (size_t)K * N * 2 <= before + 4 * (size_t)K * N + 65536);
    int fp8 = 0;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].op == IR_OP_MATMUL) {
            assert_int_equal(ir_vtype(g, g->nodes[i].in[1])->dtype, IR_DT_F8E4M3FN);
            fp8++;
        }
    assert_int_equal(fp8, 4);
    assert_true(ir_verify(g, "test"));
}

/* Constants of graph g holding data with numel elements of a 4-byte dtype. */
static int big_copies(IrGraph *g, int64_t numel)
{
    int n = 0;
    for (ValId v = 0; v < g->nvals; v++) {
        const IrValue *val = ir_val(g, v);
        n += val->kind == IR_VAL_CONST && val->data && ir_dtype_size(val->type.dtype) == 4 &&
             ir_type_numel(&val->type) == numel;
    }
    return n;
}

/* QDQ matrix products whose weights are int8 constants (DequantizeLinear with a zero
 * point, as onnxruntime's quantize_static writes them): decomposition folds each
 * weight's float copies (cast, minus the zero point, times the scale) and its int32
 * copy for the depth sums of the integer product. None is left holding data for a
 * weight that only its product reads; the dequantized weight that another node reads
 * too (here a graph output) stays, the one copy. (All of them stayed: llama_1b's int8
 * compile peaked at 23.8 GB.) */
static void test_qdq_weight_temporaries_dropped(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    int8_t *w8 = malloc((size_t)K * N);
    for (int64_t i = 0; i < (int64_t)K * N; i++)
        w8[i] = (int8_t)((i * 37) % 255 - 127);
    ValId x = ut_input(g, "x", IR_DT_F32, 2, (int64_t[]){4, K});
    float s1 = 0.05f, s2 = 0.01f;
    int8_t z1 = 3, z2 = -2;
    ValId sx = ut_const(g, IR_DT_F32, 0, NULL, &s1), zx = ut_const(g, IR_DT_I8, 0, NULL, &z1);
    ValId sw = ut_const(g, IR_DT_F32, 0, NULL, &s2), zw = ut_const(g, IR_DT_I8, 0, NULL, &z2);
    ValId q = ut_onnx_op(g, "QuantizeLinear", 13, (ValId[]){x, sx, zx}, 3, NULL, 0);
    ValId xd = ut_onnx_op(g, "DequantizeLinear", 13, (ValId[]){q, sx, zx}, 3, NULL, 0);
    for (int shared = 0; shared < 2; shared++) {
        w8[0] = (int8_t)shared;               /* two weights, not one folded twice */
        ValId w = ut_const(g, IR_DT_I8, 2, (int64_t[]){K, N}, w8);
        ValId wd = ut_onnx_op(g, "DequantizeLinear", 13, (ValId[]){w, sw, zw}, 3, NULL, 0);
        ir_add_output(g, ut_onnx_op(g, "MatMul", 13, (ValId[]){xd, wd}, 2, NULL, 0));
        if (shared)
            ir_add_output(g, wd);
    }
    free(w8);
    ut_decompose_ok(f);
    assert_true(ut_count_op(g, IR_OP_MATMUL) >= 2);   /* (with the activations' sums) */
    assert_int_equal(big_copies(g, (int64_t)K * N), 1);
}

/* This process's resident bytes (Linux /proc/self/statm), 0 when unknown. */
static size_t resident(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    bool ok = f && fscanf(f, "%lu %lu", &size, &res) == 2;
    if (f)
        fclose(f);
    return ok ? (size_t)res * (size_t)sysconf(_SC_PAGESIZE) : 0;
}

enum { MB = 8 << 20 };                      /* a float32 weight of 8 MiB in a file */

/* munmap, with the signature ir_graph_keep takes. */
static void unmap(void *p, size_t n)
{
    munmap(p, n);
}

/* A private read-only mapping of a fresh file of bytes + 4096 bytes (floats i % 251
 * from byte 4096 on), kept by g as a mapped file; a float32 constant of rank dims at
 * byte 4096 (bytes of them), all of its pages read in. */
static ValId file_const(IrGraph *g, const char *name, size_t bytes, int rank,
                        const int64_t *dims)
{
    char path[] = "/tmp/spyrec_dropXXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    float *buf = malloc(bytes);
    assert_non_null(buf);
    for (size_t i = 0; i < bytes / 4; i++)
        buf[i] = (float)(i % 251);
    assert_true(pwrite(fd, buf, bytes, 4096) == (ssize_t)bytes);
    free(buf);
    uint8_t *p = mmap(NULL, bytes + 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    assert_true(p != MAP_FAILED);
    ir_graph_keep_file(g, p, bytes + 4096, unmap);
    IrType t = ut_type(IR_DT_F32, rank, dims);
    ValId w = ir_add_const_ref(g, name, &t, p + 4096);
    volatile float sum = 0;
    for (size_t i = 0; i < bytes / 4; i += 1024)
        sum += ((const float *)(p + 4096))[i];
    (void)sum;
    return w;
}

/* The weight [MB / 4] of MB bytes in a file. */
static ValId file_weight(IrGraph *g, const char *name)
{
    return file_const(g, name, MB, 1, (int64_t[]){MB / 4});
}

/* Whether weight w (from file_weight) still reads i % 251 everywhere. */
static bool file_weight_ok(IrGraph *g, ValId w)
{
    const float *d = ir_val(g, w)->data;
    for (size_t i = 0; i < MB / 4; i++)
        if (d[i] != (float)(i % 251))
            return false;
    return true;
}

/* ir_const_drop_pages: the whole pages of a weight in a mapped file leave the resident
 * set and read the same bytes again afterwards; a constant in the arena or in memory
 * that is not a file's keeps its pages (0 bytes dropped). */
static void test_drop_file_pages(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId w = file_weight(g, "w");
    ValId a = weight(g, "a", 5);
    static _Alignas(16) float mem[65536];
    IrType tr = ut_type(IR_DT_F32, 1, (int64_t[]){65536});
    ValId r = ir_add_const_ref(g, "r", &tr, mem);
    size_t before = resident();
    assert_int_equal(ir_const_drop_pages(g, w), MB);
    size_t after = resident();
    if (before && after)      /* the kernel reports it: most of the 8 MiB went */
        assert_true(after + MB / 2 < before);
    assert_true(file_weight_ok(g, w));
    assert_int_equal(ir_const_drop_pages(g, a), 0);
    assert_int_equal(ir_const_drop_pages(g, r), 0);
    assert_true(ir_verify(g, "test"));
}

/* pass_fp16 on a float32 weight in a mapped file: the DLFloat16 copy is made and the
 * float32 pages leave the resident set, so the two are not held together (llama_1b at
 * fp16 peaked at 7.7 GB, the float32 weights and their copies; 3.3 GB with this). */
static void test_fp16_drops_source_pages(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    ValId w = file_weight(g, "w");
    ValId x = ut_input(g, "x", IR_DT_F32, 1, (int64_t[]){MB / 4});
    ir_add_output(g, ir_binary(g, IR_BIN_ADD, x, w, &O));
    assert_false(ir_failed(g));
    size_t before = resident();
    PassOptions po = {.opt_level = 2, .precision = PASS_PREC_FP16};
    assert_true(pass_fp16(g, &po));
    ir_scratch_reset(g);
    size_t after = resident();
    /* + the DLFloat16 copy (MB / 2), - the float32 pages (MB) */
    if (before && after)
        assert_true(after + MB / 4 < before);
    int copies = 0;
    for (ValId v = 0; v < g->nvals; v++) {
        const IrValue *val = ir_val(g, v);
        if (val->kind == IR_VAL_CONST && val->type.dtype == IR_DT_DLF16 &&
            ir_type_numel(&val->type) == MB / 4) {
            const uint16_t *d = val->data;
            for (size_t i = 0; i < MB / 4; i += 4099)
                assert_int_equal(d[i], spy_f32_to_dlf16_sat((float)(i % 251)));
            copies++;
        }
    }
    assert_int_equal(copies, 1);
    assert_true(ir_verify(g, "test"));
}

/* pass_siblings on three products of one activation by weights in a mapped file (an
 * attention's Q, K and V, 4 MiB each), each result read through a reshape (by a
 * node that is not a view, as attention's heads are; a view to a graph output is
 * not merged): one
 * product of the weights side by side, whose columns are the members' in order, and
 * the members' file pages leave the resident set once copied (llama_1b's 16 layers:
 * 400 MB that stayed resident to the end). */
static void test_siblings_drop_member_pages(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { KD = 1024, ND = 1024 };
    const size_t wb = (size_t)KD * ND * 4;
    ValId x = ut_input(g, "x", IR_DT_F32, 2, (int64_t[]){8, KD});
    ValId w[3];
    for (int i = 0; i < 3; i++) {
        char name[8];
        snprintf(name, sizeof name, "w%d", i);
        w[i] = file_const(g, name, wb, 2, (int64_t[]){KD, ND});
        ValId y = matmul(g, x, w[i]);
        ValId v = ir_reshape(g, y, (int64_t[]){8, 16, ND / 16}, 3, &O);
        ir_add_output(g, ir_unary(g, IR_UN_NEG, v, &O));
    }
    assert_false(ir_failed(g));
    size_t before = resident();
    PassOptions po = {.opt_level = 2};
    pass_siblings(g, &po);
    ir_scratch_reset(g);
    size_t after = resident();
    assert_int_equal(ut_count_op(g, IR_OP_MATMUL), 1);
    const float *m = NULL;
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].op == IR_OP_MATMUL)
            m = ir_val(g, g->nodes[i].in[1])->data;
    assert_non_null(m);
    for (size_t r = 0; r < KD; r += 97)
        for (size_t c = 0; c < 3 * ND; c += 89)
            assert_true(m[r * 3 * ND + c] == (float)((r * ND + c % ND) % 251));
    /* + the merged copy (3 weights), - the members' pages (3 weights) */
    if (before && after)
        assert_true(after < before + wb);
    assert_true(ir_verify(g, "test"));
}

/* The code generator writes a 96 MiB weight of a mapped file in pieces and drops each
 * piece's pages once written: the bundle (in memory here) grows as the weight's pages
 * go, the two are never both resident whole, and afterwards none of the weight is (llama_1b: 1.94 GB -> 0.56 GB, its 1 GB embedding table read
 * whole before). Not checked where the kernel cannot reset the peak, nor under ASan. */
static void test_codegen_drops_weight_pages(void **state)
{
    UtFx *f = *state;
    IrGraph *g = f->g;
    enum { KD = 4096, ND = 6144 };          /* 96 MiB */
    const size_t wb = (size_t)KD * ND * 4;
    ValId x = ut_input(g, "x", IR_DT_F32, 2, (int64_t[]){1, KD});
    ValId w = file_const(g, "w", wb, 2, (int64_t[]){KD, ND});
    ir_add_output(g, matmul(g, x, w));
    assert_false(ir_failed(g));
    size_t before = resident();
    bool peak = ut_reset_peak();
    size_t base = ut_peak_resident();
    size_t len = 0;
    uint8_t *b = ut_compile(g, &len);
    size_t top = ut_peak_resident(), after = resident();
    assert_non_null(b);
    assert_true(len >= wb);
#ifdef __SANITIZE_ADDRESS__
    peak = false;        /* ASan keeps freed buffers resident (its quarantine) */
#endif
    if (peak && base && top)     /* the bundle grows as the weight's pages go: by a piece
                                    (32 MiB) at most, 96 MiB when written whole */
        assert_true(top - base < wb / 2);
    if (before && after)         /* the weight's pages gone, the bundle in */
        assert_true(after < before + len - wb / 2);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_free_large_only, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fp8_drops_dlf16_weights, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_qdq_weight_temporaries_dropped, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_drop_file_pages, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_fp16_drops_source_pages, ut_setup, ut_teardown),
        cmocka_unit_test_setup_teardown(test_codegen_drops_weight_pages, ut_setup,
                                        ut_teardown),
        cmocka_unit_test_setup_teardown(test_siblings_drop_member_pages, ut_setup,
                                        ut_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
