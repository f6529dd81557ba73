/* test_runtime.c: unit tests of libspyrert on bundles built by hand in this file
 * (a tiny writer below lays out header, section table, payloads and CRCs): results of
 * DMA/VEC/MATMUL/GATHER/VREDUCE/VSCAN programs, the verifier's refusals, version and
 * argument checks, int64 narrowing, and thread-count and share-policy invariance.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "isa.h"
#include "rt_adapt.h"
#include "rt_model.h"
#include "sbin.h"
#include "spyrt.h"

/* ---- bundle writer ---------------------------------------------------------------- */

#ifndef TB_MAX_CODE
#define TB_MAX_CODE 4096
#endif
#ifndef TB_MAX_KERNELS
#define TB_MAX_KERNELS 8
#endif

typedef struct {
    SpyTarget target;
    char strings[64 * TB_MAX_KERNELS + 1024];
    uint32_t nstr;
    SpyTensorDesc tensors[8];
    uint32_t ntensors;
    uint8_t consts[1 << 17];
    uint32_t nconsts;
    SpyKernelDesc kernels[TB_MAX_KERNELS];
    uint32_t nkernels;
    SpyProgramDesc programs[TB_MAX_KERNELS * 32];
    uint32_t nprograms;
    SpyInsn code[TB_MAX_CODE];
    uint32_t ncode;
    uint32_t schedule[TB_MAX_KERNELS];
    uint32_t nsched;
    SpySegmentDesc segs[16];
    uint32_t nsegs;
    uint32_t arena;
    int major;
    uint32_t features;
} TB;

/* Adds a NUL-terminated string; returns its offset. */
static uint32_t tb_str(TB *b, const char *s) {
    uint32_t off = b->nstr;
    size_t n = strlen(s) + 1;
    memcpy(b->strings + off, s, n);
    b->nstr += (uint32_t)n;
    return off;
}

/* A builder with the reference 32-core target. */
static TB *tb_new(void) {
    TB *b = calloc(1, sizeof *b);
    SpyTarget *t = &b->target;
    strcpy(t->name, "spyre32");
    t->cores = 32, t->corelets = 2, t->lx_bytes = 2u << 20, t->lx_budget_bytes = 1677721;
    t->stick_bytes = 128, t->clock_mhz = 1500, t->macs_fp16_per_cycle = 1024;
    t->fp32_mac_divisor = 4, t->int8_mac_multiplier = 2, t->vec_lanes_fp32 = 32;
    t->transcendental_factor = 4, t->dram_peak_mbps = 204800, t->dram_oneway_mbps = 150000;
    t->dram_mixed_mbps = 105000, t->overlap_permille = 460, t->barrier_cycles = 1500;
    t->ring_bytes_per_cycle = 128, t->core_window_mib = 256, t->dram_gib = 112;
    b->nsegs = 2;
    b->major = SPY_SBIN_MAJOR;
    tb_str(b, "");
    return b;
}

/* Adds an I/O tensor (inputs first) and its segment; returns its segment id. */
static uint32_t tb_tensor(TB *b, int role, const char *name, int host, int dev, int rank,
                          const int64_t *dims) {
    SpyTensorDesc *t = &b->tensors[b->ntensors];
    t->name = tb_str(b, name);
    t->role = (uint8_t)role, t->host_dtype = (uint8_t)host, t->dev_dtype = (uint8_t)dev;
    t->rank = (uint8_t)rank;
    uint64_t n = 1;
    for (int d = 0; d < rank; d++)
        t->dims[d] = dims[d], n *= (uint64_t)dims[d];
    t->numel = n;
    t->seg = b->nsegs;
    unsigned es = dev == ISA_DT_F32 || dev == ISA_DT_I32 ? 4 : 1;
    b->segs[b->nsegs] = (SpySegmentDesc){SPY_SEGK_IO, b->ntensors, n * es};
    b->ntensors++;
    return b->nsegs++;
}

/* Starts a kernel: every core gets a program of just a BARRIER until tb_core. */
static uint32_t tb_kernel(TB *b, const char *name) {
    uint32_t k = b->nkernels++;
    b->kernels[k] = (SpyKernelDesc){.name = tb_str(b, name), .first_program = b->nprograms,
                                    .ncores = b->target.cores, .flops = 1000,
                                    .min_dram_bytes = 1000};
    for (uint32_t c = 0; c < b->target.cores; c++) {
        b->code[b->ncode].bar = (SpyBarrier){.opcode = ISA_BARRIER, .kernel = k};
        b->programs[b->nprograms++] = (SpyProgramDesc){b->ncode++, 1, c};
    }
    b->schedule[b->nsched++] = k;
    return k;
}

/* Gives core c of kernel k the program ins[0..n) followed by its BARRIER. */
static void tb_core(TB *b, uint32_t k, uint32_t c, const SpyInsn *ins, uint32_t n) {
    SpyProgramDesc *p = &b->programs[b->kernels[k].first_program + c];
    p->first_insn = b->ncode;
    p->ninsns = n + 1;
    memcpy(&b->code[b->ncode], ins, n * sizeof *ins);
    b->ncode += n;
    b->code[b->ncode++].bar = (SpyBarrier){.opcode = ISA_BARRIER, .kernel = k};
}

/* Adds constant bytes (64-aligned); returns their offset in segment 0. */
static uint32_t tb_const(TB *b, const void *p, size_t n) {
    uint32_t off = (b->nconsts + 63) & ~63u;
    memcpy(b->consts + off, p, n);
    b->nconsts = off + (uint32_t)n;
    return off;
}

/* Recomputes every section CRC and the table CRC of a bundle in memory. */
static void fix_crcs(uint8_t *buf, size_t len) {
    SpyHeader *h = (SpyHeader *)buf;
    SpySection *s = (SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < h->nsections; i++)
        if (s[i].offset <= len && s[i].size <= len - s[i].offset)
            s[i].crc32c = spy_crc32c(0, buf + s[i].offset, s[i].size);
    h->table_crc = 0;
    uint32_t crc = spy_crc32c(0, h, sizeof *h);
    h->table_crc = spy_crc32c(crc, s, h->nsections * sizeof *s);
}

/* Serialises the builder into a malloc'd bundle. */
static uint8_t *tb_write(TB *b, size_t *len) {
    b->segs[0] = (SpySegmentDesc){SPY_SEGK_CONST, 0, b->nconsts};
    b->segs[1] = (SpySegmentDesc){SPY_SEGK_ARENA, 0, b->arena};
    struct {
        uint32_t id;
        const void *p;
        size_t n;
    } sec[] = {{SPY_SEC_STRINGS, b->strings, b->nstr},
               {SPY_SEC_TENSORS, b->tensors, b->ntensors * sizeof(SpyTensorDesc)},
               {SPY_SEC_CONSTS, b->consts, b->nconsts},
               {SPY_SEC_KERNELS, b->kernels, b->nkernels * sizeof(SpyKernelDesc)},
               {SPY_SEC_PROGRAMS, b->programs, b->nprograms * sizeof(SpyProgramDesc)},
               {SPY_SEC_CODE, b->code, b->ncode * sizeof(SpyInsn)},
               {SPY_SEC_SCHEDULE, b->schedule, b->nsched * 4},
               {SPY_SEC_SEGMENTS, b->segs, b->nsegs * sizeof(SpySegmentDesc)},
               {SPY_SEC_META, "compiler=test\n", 14}};
    uint32_t ns = sizeof sec / sizeof sec[0];
    size_t off = (sizeof(SpyHeader) + ns * sizeof(SpySection) + 63) & ~(size_t)63;
    size_t total = off;
    for (uint32_t i = 0; i < ns; i++)
        total = ((total + 63) & ~(size_t)63) + sec[i].n;
    uint8_t *buf = calloc(1, total);
    SpyHeader *h = (SpyHeader *)buf;
    memcpy(h->magic, SPY_SBIN_MAGIC, 8);
    h->major = (uint16_t)b->major, h->minor = SPY_SBIN_MINOR;
    h->header_bytes = sizeof *h, h->nsections = ns, h->file_size = total;
    h->features = b->features;
    h->target = b->target;
    SpySection *st = (SpySection *)(buf + sizeof *h);
    for (uint32_t i = 0; i < ns; i++) {
        off = (off + 63) & ~(size_t)63;
        st[i] = (SpySection){sec[i].id, 64, off, sec[i].n, 0, 0};
        memcpy(buf + off, sec[i].p, sec[i].n);
        off += sec[i].n;
    }
    fix_crcs(buf, total);
    *len = total;
    return buf;
}

/* Loads a builder's bundle; returns the status, *m the model (or NULL). */
static spy_status tb_load(TB *b, spy_model **m, char *err, size_t errlen) {
    size_t len;
    uint8_t *buf = tb_write(b, &len);
    spy_status st = spy_model_load_memory(buf, len, m, err, errlen);
    free(buf);
    return st;
}

/* ---- instruction helpers -------------------------------------------------------- */

/* 2-d DMA: rows x cols elements, DRAM row stride drs, LX row stride lrs. */
static SpyInsn dma2(int op, unsigned esize, uint32_t seg, int64_t doff, uint32_t lx,
                    uint32_t rows, uint32_t cols, int32_t drs, int32_t lrs) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    in.dma.opcode = (uint8_t)op, in.dma.esize = (uint8_t)esize, in.dma.ndim = 2;
    in.dma.seg = seg, in.dma.dram_off = doff, in.dma.lx = lx;
    for (int d = 0; d < ISA_MAX_DIMS; d++)
        in.dma.dims[d] = 1;
    in.dma.dims[0] = rows, in.dma.dims[1] = cols;
    in.dma.dram_stride[0] = drs, in.dma.dram_stride[1] = 1;
    in.dma.lx_stride[0] = lrs, in.dma.lx_stride[1] = 1;
    return in;
}

/* VEC over rows x cols with contiguous operands of row stride rs. */
static SpyInsn vec(int fn, int dt, int sdt, uint32_t dst, uint32_t s0, uint32_t s1,
                   uint32_t rows, uint32_t cols, int32_t rs) {
    SpyInsn in;
    memset(&in, 0, sizeof in);
    SpyVec *v = &in.vec;
    v->opcode = ISA_VEC, v->dtype = (uint8_t)dt, v->src_dtype = (uint8_t)sdt;
    v->fn = (uint16_t)fn;
    v->dst = dst, v->src[0] = s0, v->src[1] = s1, v->rows = rows, v->cols = cols;
    v->dst_rs = rs;
    for (int q = 0; q < 3; q++)
        v->src_rs[q] = rs, v->src_cs[q] = 1;
    return in;
}

/* VEC fn(src, imm) with an F32 immediate. */
static SpyInsn vec_imm(int fn, uint32_t dst, uint32_t s0, float imm, uint32_t n) {
    SpyInsn in = vec(fn, ISA_DT_F32, ISA_DT_F32, dst, s0, 0, 1, n, (int32_t)n);
    in.vec.nsrc = 2;
    in.vec.flags = ISA_F_IMM;
    memcpy(&in.vec.imm, &imm, 4);
    return in;
}

/* ---- a pointwise model: y = relu(x * 2 - 3) on x[rows, cols], one row per core ------- */

static TB *build_pointwise_n(uint32_t rows, uint32_t cols) {
    TB *b = tb_new();
    int64_t dims[2] = {rows, cols};
    uint32_t sx = tb_tensor(b, SPY_ROLE_INPUT, "x", 1, 1, 2, dims);
    uint32_t sy = tb_tensor(b, SPY_ROLE_OUTPUT, "y", 1, 1, 2, dims);
    uint32_t k = tb_kernel(b, "k0_pointwise");
    uint32_t rb = 4 * cols;
    for (uint32_t c = 0; c < rows; c++) {
        SpyInsn p[6];
        p[0] = dma2(ISA_LOAD, 4, sx, c * rb, 0, 1, cols, (int32_t)cols, (int32_t)cols);
        p[1] = vec_imm(ISA_VF_MUL, rb, 0, 2.0f, cols);
        p[2] = vec_imm(ISA_VF_SUB, rb, rb, 3.0f, cols);
        p[3] = vec(ISA_VF_RELU, ISA_DT_F32, 0, 2 * rb, rb, 0, 1, cols, (int32_t)cols);
        p[3].vec.nsrc = 1;
        p[4] = dma2(ISA_STORE, 4, sy, c * rb, 2 * rb, 1, cols, (int32_t)cols, (int32_t)cols);
        tb_core(b, k, c, p, 5);
    }
    return b;
}

static TB *build_pointwise(void) {
    return build_pointwise_n(8, 40);
}

/* Runs a model on one input and one output buffer with nthreads threads. */
static spy_status run1(spy_model *m, int nthreads, const void *in, void *out, char *err,
                       size_t errlen) {
    spy_session *s = NULL;
    spy_session_options o = {.num_threads = nthreads, .profile = 1};
    spy_status st = spy_session_create(m, &o, &s);
    if (st)
        return st;
    const void *ins[1] = {in};
    void *outs[1] = {out};
    st = spy_session_run(s, ins, outs);
    if (err)
        snprintf(err, errlen, "%s", spy_session_error(s));
    spy_session_free(s);
    return st;
}

static void test_pointwise(void **state) {
    (void)state;
    TB *b = build_pointwise();
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_num_inputs(m), 1);
    assert_int_equal(spy_model_num_outputs(m), 1);
    spy_tensor_info ti;
    assert_int_equal(spy_model_output_info(m, 0, &ti), SPY_OK);
    assert_string_equal(ti.name, "y");
    assert_int_equal(ti.nbytes, 8 * 40 * 4);
    float x[320], y[320];
    for (int i = 0; i < 320; i++)
        x[i] = (float)(i % 7) - 2.5f;
    memset(y, 0, sizeof y);
    assert_int_equal(run1(m, 2, x, y, err, sizeof err), SPY_OK);
    for (int i = 0; i < 320; i++) {
        float want = x[i] * 2.0f - 3.0f;
        assert_true(y[i] == (want < 0 ? 0.0f : want));
    }
    /* timing model by hand: per core 3 VECs of 160 bytes = 3 x ceil(160/128)/2 cycles;
     * core c loads and stores 160 bytes at byte c*160, charged as whole 128-byte
     * sticks: 2 each way (the run starts 0, 32, 64 or 96 bytes into a stick) = 512
     * bytes, not 320; loads and stores are both > 10% -> mixed bandwidth, 8 active */
    double comp = 3.0 / 1.5e9, dram = 512.0 * 8 / 105e9;
    double want = (comp + dram - 0.46 * comp + 1500 / 1.5e9) * 1e6;
    assert_true(fabs(spy_model_device_us(m) - want) < 1e-9);
    spy_kernel_profile kp;
    assert_int_equal(spy_model_kernel_profile(m, 0, &kp), SPY_OK);
    /* derived from the instructions: 1280 bytes read and 1280 written once (sticks
     * are not compulsory), 3 x 320 element operations */
    assert_int_equal(kp.min_dram_bytes, 2560);
    assert_int_equal(kp.flops, 960);
    assert_int_equal(kp.dram_bytes, 8 * 512);
    assert_true(fabs(kp.roofline_us - 2560.0 / 204800e6 * 1e6) < 1e-12); /* dram-bound */
    assert_string_equal(kp.limiter, "barrier");
    spy_model_free(m);
    free(b);
}

/* ---- MATMUL: C[m,n] = A[m,k] B[k,n], A input, B constant, several tile shapes ------- */

/* Deterministic operand values of the MATMUL tests. */
static float mm_b(uint32_t i) {
    return (float)((i * 37) % 11) * 0.25f - 1.0f;
}
static float mm_a(uint32_t i) {
    return (float)((i * 13) % 9) * 0.5f - 2.0f;
}

/* A model computing C = A (input) x B (constant) on core 3. */
static TB *build_matmul(uint32_t M, uint32_t N, uint32_t K) {
    TB *b = tb_new();
    int64_t da[2] = {M, K}, dc[2] = {M, N};
    uint32_t sa = tb_tensor(b, SPY_ROLE_INPUT, "a", 1, 1, 2, da);
    uint32_t sc = tb_tensor(b, SPY_ROLE_OUTPUT, "c", 1, 1, 2, dc);
    float *B = malloc(sizeof(float) * K * N);
    for (uint32_t i = 0; i < K * N; i++)
        B[i] = mm_b(i);
    uint32_t boff = tb_const(b, B, sizeof(float) * K * N);
    free(B);
    uint32_t k = tb_kernel(b, "k0_matmul");
    uint32_t la = 0, lb = 4 * M * K, lc = lb + 4 * K * N;
    SpyInsn p[4];
    p[0] = dma2(ISA_LOAD, 4, sa, 0, la, M, K, (int32_t)K, (int32_t)K);
    p[1] = dma2(ISA_LOAD, 4, ISA_SEG_CONST, boff, lb, K, N, (int32_t)N, (int32_t)N);
    memset(&p[2], 0, sizeof p[2]);
    p[2].mm = (SpyMatmul){.opcode = ISA_MATMUL, .dtype = ISA_DT_F32, .out_dtype = ISA_DT_F32,
                          .a = la, .b = lb, .c = lc, .m = M, .n = N, .k = K,
                          .lda = K, .ldb = N, .ldc = N};
    p[3] = dma2(ISA_STORE, 4, sc, 0, lc, M, N, (int32_t)N, (int32_t)N);
    tb_core(b, k, 3, p, 4);
    return b;
}

static void check_matmul(uint32_t M, uint32_t N, uint32_t K, int nthreads) {
    TB *b = build_matmul(M, N, K);
    float *A = malloc(sizeof(float) * M * K), *C = malloc(sizeof(float) * M * N);
    for (uint32_t i = 0; i < M * K; i++)
        A[i] = mm_a(i);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    assert_int_equal(run1(m, nthreads, A, C, err, sizeof err), SPY_OK);
    for (uint32_t i = 0; i < M; i++)
        for (uint32_t j = 0; j < N; j++) {
            float s = 0;
            for (uint32_t q = 0; q < K; q++)
                s += A[i * K + q] * mm_b(q * N + j);
            assert_true(C[i * N + j] == s);
        }
    /* timing: one core, f32 rate macs/4 per cycle, never below ceil(m/8) */
    double cyc = fmax((double)M * N * K / 256.0, (double)((M + 7) / 8));
    double cores[32];
    assert_int_equal(spy_model_kernel_core_us(m, 0, cores, 32), 32);
    assert_true(cores[3] > cyc / 1500.0);
    assert_true(cores[0] == 0.0);
    spy_model_free(m);
    free(A), free(C), free(b);
}

static void test_matmul(void **state) {
    (void)state;
    check_matmul(5, 19, 7, 1);
    check_matmul(8, 32, 64, 2);
    check_matmul(13, 48, 33, 3);
    check_matmul(1, 1, 1, 1);
    check_matmul(6, 21, 1100, 2); /* column tail over several k panels */
    check_matmul(11, 29, 40, 1);  /* 13-column tail */
}

/* ---- GATHER: rows of a constant table selected by int64 indices (narrowed) ----------- */

/* Rows of re elements (4: whole rows; 1: each row's first element, the runtime's
 * single-element path) of a [10, 4] table. */
static TB *build_gather(int64_t nidx, uint32_t re) {
    TB *b = tb_new();
    int64_t di[1] = {nidx}, dy[2] = {nidx, re};
    uint32_t si = tb_tensor(b, SPY_ROLE_INPUT, "ids", 7, ISA_DT_I32, 1, di);
    uint32_t sy = tb_tensor(b, SPY_ROLE_OUTPUT, "rows", 1, 1, 2, dy);
    float tab[10 * 4];
    for (int i = 0; i < 40; i++)
        tab[i] = (float)i;
    uint32_t toff = tb_const(b, tab, sizeof tab);
    uint32_t k = tb_kernel(b, "k0_gather");
    SpyInsn p[3];
    p[0] = dma2(ISA_LOAD, 4, si, 0, 0, 1, (uint32_t)nidx, 0, 0);
    memset(&p[1], 0, sizeof p[1]);
    p[1].gather = (SpyGather){.opcode = ISA_GATHER, .esize = 4, .seg = ISA_SEG_CONST,
                              .dram_off = toff, .row_stride = 4, .lx_dst = 1024, .lx_idx = 0,
                              .nidx = (uint32_t)nidx, .row_elems = re, .bound = 10,
                              .dst_row_stride = re};
    p[2] = dma2(ISA_STORE, 4, sy, 0, 1024, 1, (uint32_t)(re * nidx), 0, 0);
    tb_core(b, k, 7, p, 3);
    return b;
}

/* Whole rows and single elements (re 4, 1): values, wrapped negative indices, and the
 * errors of indices out of range. */
static void check_gather(uint32_t re) {
    TB *b = build_gather(5, re);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    int64_t ids[5] = {0, 9, -1, 3, 3};
    float rows[20];
    assert_int_equal(run1(m, 2, ids, rows, err, sizeof err), SPY_OK);
    int want[5] = {0, 9, 9, 3, 3};
    for (int j = 0; j < 5; j++)
        for (uint32_t e = 0; e < re; e++)
            assert_true(rows[j * re + e] == (float)(want[j] * 4 + (int)e));
    /* out of range after wrap-around */
    int64_t bad[5] = {0, 1, 10, 2, 3};
    assert_int_equal(run1(m, 2, bad, rows, err, sizeof err), SPY_E_RUNTIME);
    assert_non_null(strstr(err, "index 10"));
    assert_non_null(strstr(err, "core 7"));
    assert_non_null(strstr(err, "k0_gather"));
    int64_t neg[5] = {0, -11, 1, 2, 3};
    assert_int_equal(run1(m, 1, neg, rows, err, sizeof err), SPY_E_RUNTIME);
    /* int64 value outside int32: refused at the edge */
    int64_t huge[5] = {0, 1, (int64_t)1 << 40, 2, 3};
    assert_int_equal(run1(m, 1, huge, rows, err, sizeof err), SPY_E_RUNTIME);
    assert_non_null(strstr(err, "'ids' element 2"));
    spy_model_free(m);
    free(b);
}

static void test_gather(void **state) {
    (void)state;
    check_gather(4);
    check_gather(1);
}

/* ---- reductions, scans, casts, compares, select --------------------------------- */

/* One core running reductions, a scan, a comparison, a cast, exp and a select. */
static TB *build_vector(void) {
    TB *b = tb_new();
    int64_t dx[2] = {3, 50}, dr[1] = {12 * 50};
    uint32_t sx = tb_tensor(b, SPY_ROLE_INPUT, "x", 1, 1, 2, dx);
    uint32_t sr = tb_tensor(b, SPY_ROLE_OUTPUT, "r", 1, 1, 1, dr);
    uint32_t k = tb_kernel(b, "k0_vector");
    SpyInsn p[16];
    int n = 0;
    p[n++] = dma2(ISA_LOAD, 4, sx, 0, 0, 3, 50, 50, 50); /* x at LX 0, 600 bytes */
    memset(&p[n], 0, sizeof p[n]);                       /* row sums -> 1000 */
    p[n++].red = (SpyVReduce){.opcode = ISA_VREDUCE, .dtype = ISA_DT_F32, .fn = ISA_RF_SUM,
                              .dst = 1000, .src = 0, .rows = 3, .len = 50, .src_rs = 50,
                              .src_cs = 1, .dst_rs = 1};
    memset(&p[n], 0, sizeof p[n]); /* row argmax -> 1100 (int32) */
    p[n++].red = (SpyVReduce){.opcode = ISA_VREDUCE, .dtype = ISA_DT_F32, .fn = ISA_RF_ARGMAX,
                              .dst = 1100, .src = 0, .rows = 3, .len = 50, .src_rs = 50,
                              .src_cs = 1, .dst_rs = 1};
    memset(&p[n], 0, sizeof p[n]); /* column max (strided) -> 1200 */
    p[n++].red = (SpyVReduce){.opcode = ISA_VREDUCE, .dtype = ISA_DT_F32, .fn = ISA_RF_MAX,
                              .dst = 1200, .src = 0, .rows = 50, .len = 3, .src_rs = 1,
                              .src_cs = 50, .dst_rs = 1};
    memset(&p[n], 0, sizeof p[n]); /* inclusive scan of row 0 -> 1400 */
    p[n++].scan = (SpyVScan){.opcode = ISA_VSCAN, .dtype = ISA_DT_F32, .dst = 1400, .src = 0,
                             .rows = 1, .len = 50, .src_rs = 50, .dst_rs = 50};
    /* x > 0 -> bool at 1800; cast bool -> f32 at 2000; exp(x) at 2400 */
    SpyInsn gt = vec(ISA_VF_GT, ISA_DT_BOOL, ISA_DT_F32, 1800, 0, 0, 1, 150, 150);
    gt.vec.flags = ISA_F_IMM, gt.vec.imm = 0, gt.vec.nsrc = 2;
    p[n++] = gt;
    p[n] = vec(ISA_VF_CAST, ISA_DT_F32, ISA_DT_BOOL, 2000, 1800, 0, 1, 150, 150);
    p[n++].vec.nsrc = 1;
    p[n] = vec(ISA_VF_EXP, ISA_DT_F32, 0, 2600, 0, 0, 1, 150, 150);
    p[n++].vec.nsrc = 1;
    /* select(x > 0, imm 7, x) at 3200 */
    SpyInsn sel = vec(ISA_VF_SELECT, ISA_DT_F32, ISA_DT_F32, 3200, 1800, 0, 1, 150, 150);
    float seven = 7.0f;
    sel.vec.nsrc = 3, sel.vec.src[1] = 0, sel.vec.src[2] = 0, sel.vec.flags = ISA_F_IMM;
    memcpy(&sel.vec.imm, &seven, 4);
    p[n++] = sel;
    /* store: sums(3) argmax(3) colmax(50) scan(50) cast(150) exp(150) select(150) */
    p[n++] = dma2(ISA_STORE, 4, sr, 0, 1000, 1, 3, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 12, 1100, 1, 3, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 24, 1200, 1, 50, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 224, 1400, 1, 50, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 424, 2000, 1, 150, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 1024, 2600, 1, 150, 0, 0);
    p[n++] = dma2(ISA_STORE, 4, sr, 1624, 3200, 1, 150, 0, 0);
    tb_core(b, k, 0, p, (uint32_t)n);
    return b;
}

static void test_vector_unit(void **state) {
    (void)state;
    TB *b = build_vector();
    spy_model *m = NULL;
    char err[512];
    spy_status st = tb_load(b, &m, err, sizeof err);
    if (st)
        print_error("%s\n", err);
    assert_int_equal(st, SPY_OK);
    float x[150], r[600];
    for (int i = 0; i < 150; i++)
        x[i] = (float)((i * 29) % 23) - 11.0f;
    assert_int_equal(run1(m, 1, x, r, err, sizeof err), SPY_OK);
    for (int row = 0; row < 3; row++) {
        float s = 0, best = x[row * 50];
        int arg = 0;
        for (int i = 0; i < 50; i++) {
            s += x[row * 50 + i];
            if (x[row * 50 + i] > best)
                best = x[row * 50 + i], arg = i;
        }
        assert_true(fabsf(r[row] - s) < 1e-4f);
        int32_t got;
        memcpy(&got, &r[3 + row], 4);
        assert_int_equal(got, arg);
    }
    float acc = 0;
    for (int i = 0; i < 50; i++) {
        float mx = fmaxf(fmaxf(x[i], x[50 + i]), x[100 + i]);
        assert_true(r[6 + i] == mx);
        acc += x[i];
        assert_true(r[56 + i] == acc);
    }
    for (int i = 0; i < 150; i++) {
        assert_true(r[106 + i] == (x[i] > 0 ? 1.0f : 0.0f));
        /* EXP is the runtime's own vectorised one (rt_vmath.h): within 2 ulp of libm */
        assert_true(fabsf(r[256 + i] - expf(x[i])) <= 2.4e-7f * expf(x[i]));
        assert_true(r[406 + i] == (x[i] > 0 ? 7.0f : x[i])); /* IMM is operand 1 */
    }
    spy_model_free(m);
    free(b);
}

/* ---- integer ops: int64 in/out at the edge, wrap-around, IMM_A division ----------- */

/* y = 100 / (x * 3 - 6) (int32 on the device, int64 on the host), z = float(x * 3 - 6). */
static TB *build_int_ops(uint32_t n) {
    TB *b = tb_new();
    int64_t d[1] = {n};
    uint32_t sx = tb_tensor(b, SPY_ROLE_INPUT, "x", 7, ISA_DT_I32, 1, d);
    uint32_t sy = tb_tensor(b, SPY_ROLE_OUTPUT, "y", 7, ISA_DT_I32, 1, d);
    uint32_t sz = tb_tensor(b, SPY_ROLE_OUTPUT, "z", 1, ISA_DT_F32, 1, d);
    uint32_t k = tb_kernel(b, "k0_int");
    SpyInsn p[7];
    p[0] = dma2(ISA_LOAD, 4, sx, 0, 0, 1, n, 0, 0);
    p[1] = vec(ISA_VF_MUL, ISA_DT_I32, 0, 4096, 0, 0, 1, n, (int32_t)n);
    p[1].vec.flags = ISA_F_IMM, p[1].vec.imm = 3, p[1].vec.nsrc = 2;
    p[2] = vec(ISA_VF_SUB, ISA_DT_I32, 0, 4096, 4096, 0, 1, n, (int32_t)n);
    p[2].vec.flags = ISA_F_IMM, p[2].vec.imm = 6, p[2].vec.nsrc = 2;
    p[3] = vec(ISA_VF_DIV, ISA_DT_I32, 0, 8192, 0, 4096, 1, n, (int32_t)n);
    p[3].vec.flags = ISA_F_IMM_A, p[3].vec.imm = 100, p[3].vec.nsrc = 2;
    p[3].vec.src[1] = 4096;
    p[4] = vec(ISA_VF_CAST, ISA_DT_F32, ISA_DT_I32, 12288, 4096, 0, 1, n, (int32_t)n);
    p[4].vec.nsrc = 1;
    p[5] = dma2(ISA_STORE, 4, sy, 0, 8192, 1, n, 0, 0);
    p[6] = dma2(ISA_STORE, 4, sz, 0, 12288, 1, n, 0, 0);
    tb_core(b, k, 31, p, 7);
    return b;
}

static void test_int_ops(void **state) {
    (void)state;
    TB *b = build_int_ops(6);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    spy_session *s;
    spy_session_options o = {.num_threads = 2, .debug_lx_poison = 1};
    assert_int_equal(spy_session_create(m, &o, &s), SPY_OK);
    int64_t x[6] = {0, 1, 3, -5, 40, 1000000}, y[6];
    float z[6];
    const void *ins[1] = {x};
    void *outs[2] = {y, z};
    assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
    for (int i = 0; i < 6; i++) {
        int32_t d = (int32_t)(x[i] * 3 - 6);
        assert_int_equal(y[i], 100 / d);
        assert_true(z[i] == (float)d);
    }
    x[1] = 2; /* 2 * 3 - 6 = 0 */
    assert_int_equal(spy_session_run(s, ins, outs), SPY_E_RUNTIME);
    assert_non_null(strstr(spy_session_error(s), "division by zero"));
    assert_non_null(strstr(spy_session_error(s), "core 31"));
    x[1] = -((int64_t)1 << 31) - 1;
    assert_int_equal(spy_session_run(s, ins, outs), SPY_E_RUNTIME);
    assert_non_null(strstr(spy_session_error(s), "'x' element 1"));
    spy_session_free(s);
    spy_model_free(m);
    free(b);
}

/* ---- loading from a file ----------------------------------------------------------- */

static void test_load_file(void **state) {
    (void)state;
    TB *b = build_gather(3, 4);
    size_t len;
    uint8_t *buf = tb_write(b, &len);
    char path[] = "/tmp/spyrt_test_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_int_equal(fwrite(buf, 1, len, f), len);
    fclose(f);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(spy_model_load_file(path, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_num_kernels(m), 1);
    spy_model_free(m);
    f = fopen(path, "wb"); /* truncated copy: the message names the file */
    assert_int_equal(fwrite(buf, 1, len - 64, f), len - 64);
    fclose(f);
    assert_int_equal(spy_model_load_file(path, &m, err, sizeof err), SPY_E_BAD_BUNDLE);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "truncated"));
    remove(path);
    free(buf);
    free(b);
}

/* ---- thread-count invariance ------------------------------------------------------ */

static void test_threads_invariant(void **state) {
    (void)state;
    /* large enough (32 x 4096) to be shared over threads rather than run serially */
    TB *b = build_pointwise_n(32, 4096);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    size_t n = 32 * 4096;
    float *x = malloc(n * 4), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = sinf((float)i) * 10.0f;
    assert_int_equal(run1(m, 1, x, y1, err, sizeof err), SPY_OK);
    for (size_t i = 0; i < n; i++) {
        float want = x[i] * 2.0f - 3.0f;
        assert_true(y1[i] == (want < 0 ? 0.0f : want));
    }
    for (int t = 2; t <= 9; t += 7) {
        memset(y2, 0, n * 4);
        assert_int_equal(run1(m, t, x, y2, err, sizeof err), SPY_OK);
        assert_memory_equal(y1, y2, n * 4);
    }
    free(x), free(y1), free(y2);
    spy_kernel_profile p;
    spy_session *s;
    assert_int_equal(spy_session_create(m, NULL, &s), SPY_OK);
    assert_int_equal(spy_session_kernel_profile(s, 0, &p), SPY_OK);
    assert_string_equal(p.name, "k0_pointwise");
    assert_true(p.device_us > 0 && p.roofline_us > 0);
    assert_int_equal(p.dram_bytes, 2 * 32 * 4096 * 4);
    assert_int_equal(spy_session_kernel_profile(s, 1, &p), SPY_E_INVALID_ARG);
    spy_session_free(s);
    spy_model_free(m);
    free(b);
}

/* A kernel of middling host work (32 cores x 256 elements: share rank 1) runs under
 * both share policies of its session's 2 threads, serial and shared, through the
 * trials of the first periods: every run gives the bits of the 1-thread run. */
static void test_share_policies(void **state) {
    (void)state;
    TB *b = build_pointwise_n(32, 256);
    spy_model *m = NULL;
    char err[512];
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    assert_int_equal(m->share_rank[0], 1);
    assert_int_equal(m->share_policies, 1u | 1u << 1);
    size_t n = 32 * 256;
    float *x = malloc(n * 4), *y1 = malloc(n * 4), *y2 = malloc(n * 4);
    for (size_t i = 0; i < n; i++)
        x[i] = cosf((float)i) * 7.0f;
    assert_int_equal(run1(m, 1, x, y1, err, sizeof err), SPY_OK);
    spy_session *s;
    spy_session_options o = {.num_threads = 2};
    assert_int_equal(spy_session_create(m, &o, &s), SPY_OK);
    const void *ins[1] = {x};
    void *outs[1] = {y2};
    unsigned used = 0;
    for (int r = 0; r < 200; r++) {
        memset(y2, 0, n * 4);
        assert_int_equal(spy_session_run(s, ins, outs), SPY_OK);
        used |= 1u << rt_session_policy(s);
        assert_memory_equal(y1, y2, n * 4);
    }
    assert_int_equal(used, 1u | 1u << 1);
    spy_session_free(s);
    free(x), free(y1), free(y2);
    spy_model_free(m);
    free(b);
}

/* ---- verifier refusals -------------------------------------------------------------- */

/* Loads buf and expects status want with a message containing needle. */
static void expect_refused(const uint8_t *buf, size_t len, spy_status want, const char *needle) {
    spy_model *m = (spy_model *)1;
    char err[512];
    spy_status st = spy_model_load_memory(buf, len, &m, err, sizeof err);
    if (st != want || (needle && !strstr(err, needle)))
        print_error("status %d, message: %s\n", st, err);
    assert_int_equal(st, want);
    assert_null(m);
    if (needle)
        assert_non_null(strstr(err, needle));
}

static void test_corrupt_container(void **state) {
    (void)state;
    TB *b = build_pointwise();
    size_t len;
    uint8_t *buf = tb_write(b, &len);
    uint8_t *c = malloc(len);
    /* bad magic */
    memcpy(c, buf, len);
    c[0] = 'X';
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "magic");
    /* flipped bit in a section payload -> CRC */
    memcpy(c, buf, len);
    c[len - 20] ^= 0x10;
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "CRC32C");
    /* flipped bit in the section table -> table CRC */
    memcpy(c, buf, len);
    c[sizeof(SpyHeader) + 8] ^= 1;
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "CRC32C");
    /* truncation at several points */
    size_t cuts[] = {0, 10, 255, 300, len / 2, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
        expect_refused(buf, cuts[i], SPY_E_BAD_BUNDLE, NULL);
    /* overlapping sections (CRCs made consistent so the overlap check is what fires) */
    memcpy(c, buf, len);
    SpySection *s = (SpySection *)(c + sizeof(SpyHeader));
    s[1].offset = s[0].offset;
    fix_crcs(c, len);
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "overlap");
    /* misaligned section */
    memcpy(c, buf, len);
    s[2].offset += 4;
    fix_crcs(c, len);
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "misaligned");
    /* offset + size overflow */
    memcpy(c, buf, len);
    s[3].size = UINT64_MAX - 10;
    fix_crcs(c, len);
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "passes the end");
    /* duplicate section id */
    memcpy(c, buf, len);
    s[4].id = s[3].id;
    fix_crcs(c, len);
    expect_refused(c, len, SPY_E_BAD_BUNDLE, "duplicate");
    /* unknown feature bits, newer major */
    memcpy(c, buf, len);
    ((SpyHeader *)c)->features = 0x80;   /* a bit no format defines */
    fix_crcs(c, len);
    expect_refused(c, len, SPY_E_VERSION, "feature");
    free(c);
    free(buf);
    b->major = SPY_SBIN_MAJOR + 1;
    buf = tb_write(b, &len);
    expect_refused(buf, len, SPY_E_VERSION, "rebuild");
    free(buf);
    free(b);
}

/* Builds the pointwise model, lets mutate() change it, expects a refusal. */
static void refuse_mutation(void (*mutate)(TB *), spy_status want, const char *needle) {
    TB *b = build_pointwise();
    mutate(b);
    size_t len;
    uint8_t *buf = tb_write(b, &len);
    expect_refused(buf, len, want, needle);
    free(buf);
    free(b);
}

static void mut_lx_range(TB *b) {
    b->code[b->programs[2].first_insn].dma.lx = 1677721 - 100; /* core 2's LOAD */
}
static void mut_no_barrier(TB *b) {
    SpyProgramDesc *p = &b->programs[5];
    b->code[p->first_insn + p->ninsns - 1].opcode = ISA_NOP;
}
static void mut_early_barrier(TB *b) {
    SpyProgramDesc *p = &b->programs[1];
    b->code[p->first_insn + 1].bar = (SpyBarrier){.opcode = ISA_BARRIER, .kernel = 0};
}
static void mut_dram_range(TB *b) {
    b->code[b->programs[7].first_insn].dma.dram_off = 7 * 160 + 4;
}
static void mut_store_input(TB *b) {
    SpyProgramDesc *p = &b->programs[0];
    b->code[p->first_insn + 4].dma.seg = 2;
}
static void mut_opcode(TB *b) {
    b->code[b->programs[3].first_insn + 1].opcode = 77;
}
static void mut_core_dup(TB *b) {
    b->programs[4].core = 3;
}
static void mut_bad_fn(TB *b) {
    b->code[b->programs[0].first_insn + 1].vec.fn = ISA_VF_COUNT;
}
static void mut_vec_types(TB *b) {
    b->code[b->programs[0].first_insn + 1].vec.fn = ISA_VF_SHL; /* integer-only on F32 */
}
static void mut_tensor_dtype(TB *b) {
    b->tensors[0].host_dtype = 7; /* int64 host for an f32 device tensor */
}
static void mut_seg_size(TB *b) {
    b->segs[3].size += 4;
}
static void mut_schedule(TB *b) {
    b->schedule[0] = 5;
}
static void mut_target(TB *b) {
    b->target.clock_mhz = 0;
}
static void mut_numel(TB *b) {
    b->tensors[1].numel = 7;
}

/* A LOAD that moves nothing (an extent 0) from an offset far past its segment: the
 * runtime forms that address and the timing reads it, so the offset is checked too. */
static void mut_empty_far(TB *b) {
    SpyDma *d = &b->code[b->programs[2].first_insn].dma;
    d->dims[0] = 0;
    d->dram_off = (int64_t)1 << 60;
}

static void mut_ring_nofeat(TB *b) {
    b->code[b->programs[2].first_insn].dma.flags = ISA_F_RING;
}
static void mut_ring_orphan(TB *b) {
    b->features = SPY_FEAT_RING;
    mut_ring_nofeat(b);
}
/* The tile's only DRAM LOAD is on the same core as its RING LOAD (core 2 reads its
 * rows, then reads them again over the ring): no other core puts them on the ring. */
static void mut_ring_same_core(TB *b) {
    SpyInsn *p = &b->code[b->programs[2].first_insn];
    p[1] = p[0];
    p[1].dma.flags = ISA_F_RING;
    b->features = SPY_FEAT_RING;
}

/* A LOAD over the ring (ISA_F_RING) is refused without the feature bit or without a
 * DRAM LOAD of the same tile on another core of the kernel; with one it delivers that
 * tile (core 3 computes core 2's rows) and is charged no DRAM bytes. */
static void test_ring(void **state) {
    (void)state;
    refuse_mutation(mut_ring_nofeat, SPY_E_BAD_BUNDLE, "SPY_FEAT_RING");
    refuse_mutation(mut_ring_orphan, SPY_E_BAD_BUNDLE, "no other core");
    refuse_mutation(mut_ring_same_core, SPY_E_BAD_BUNDLE, "core 2: a LOAD over the ring");
    TB *b = build_pointwise();
    spy_model *m = NULL;
    char err[512];
    spy_kernel_profile p0, p1;
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_kernel_profile(m, 0, &p0), SPY_OK);
    spy_model_free(m);
    SpyDma *x = &b->code[b->programs[3].first_insn].dma;
    *x = b->code[b->programs[2].first_insn].dma;
    x->flags = ISA_F_RING;
    b->features = SPY_FEAT_RING;
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    assert_int_equal(spy_model_kernel_profile(m, 0, &p1), SPY_OK);
    assert_true(p1.dram_bytes < p0.dram_bytes);
    float in[320], out[320];
    for (int i = 0; i < 320; i++)
        in[i] = (float)(i % 11) - 4.0f;
    assert_int_equal(run1(m, 2, in, out, err, sizeof err), SPY_OK);
    for (int i = 0; i < 40; i++) {
        float want = in[80 + i] * 2.0f - 3.0f;
        assert_true(out[120 + i] == (want > 0 ? want : 0.0f));
    }
    spy_model_free(m);
    free(b);
}

static void test_verifier(void **state) {
    (void)state;
    refuse_mutation(mut_lx_range, SPY_E_BAD_BUNDLE, "core 2 instruction 0");
    refuse_mutation(mut_no_barrier, SPY_E_BAD_BUNDLE, "BARRIER");
    refuse_mutation(mut_early_barrier, SPY_E_BAD_BUNDLE, "unreachable");
    refuse_mutation(mut_dram_range, SPY_E_BAD_BUNDLE, "DRAM range");
    refuse_mutation(mut_empty_far, SPY_E_BAD_BUNDLE, "DRAM offset 1152921504606846976");
    refuse_mutation(mut_store_input, SPY_E_BAD_BUNDLE, "read-only");
    refuse_mutation(mut_opcode, SPY_E_BAD_BUNDLE, "unknown opcode 77");
    refuse_mutation(mut_core_dup, SPY_E_BAD_BUNDLE, "core 3");
    refuse_mutation(mut_bad_fn, SPY_E_BAD_BUNDLE, "unknown function");
    refuse_mutation(mut_vec_types, SPY_E_BAD_BUNDLE, "SHL");
    refuse_mutation(mut_tensor_dtype, SPY_E_BAD_BUNDLE, "'x'");
    refuse_mutation(mut_seg_size, SPY_E_BAD_BUNDLE, "SEGMENTS entry 3");
    refuse_mutation(mut_schedule, SPY_E_BAD_BUNDLE, "SCHEDULE");
    refuse_mutation(mut_target, SPY_E_TARGET, "clock_mhz");
    refuse_mutation(mut_numel, SPY_E_BAD_BUNDLE, "numel");
}

/* ---- NULL and bad arguments ------------------------------------------------------- */

static void test_bad_args(void **state) {
    (void)state;
    char err[256];
    spy_model *m = NULL;
    assert_int_equal(spy_model_load_memory(NULL, 10, &m, err, sizeof err), SPY_E_INVALID_ARG);
    assert_int_equal(spy_model_load_memory("x", 1, NULL, err, sizeof err), SPY_E_INVALID_ARG);
    assert_int_equal(spy_model_load_file(NULL, &m, err, sizeof err), SPY_E_INVALID_ARG);
    assert_int_equal(spy_model_load_file("/nonexistent/x.sbin", &m, err, sizeof err), SPY_E_IO);
    assert_non_null(strstr(err, "x.sbin"));
    assert_int_equal(spy_session_create(NULL, NULL, NULL), SPY_E_INVALID_ARG);
    assert_int_equal(spy_session_run(NULL, NULL, NULL), SPY_E_INVALID_ARG);
    assert_int_equal(spy_model_input_info(NULL, 0, NULL), SPY_E_INVALID_ARG);
    spy_model_free(NULL);
    spy_session_free(NULL);
    TB *b = build_pointwise();
    assert_int_equal(tb_load(b, &m, err, sizeof err), SPY_OK);
    spy_tensor_info ti;
    assert_int_equal(spy_model_input_info(m, 1, &ti), SPY_E_INVALID_ARG);
    assert_int_equal(spy_model_input_info(m, -1, &ti), SPY_E_INVALID_ARG);
    spy_session *s;
    assert_int_equal(spy_session_create(m, NULL, &s), SPY_OK);
    float y[320];
    const void *ins[1] = {NULL};
    void *outs[1] = {y};
    assert_int_equal(spy_session_run(s, ins, outs), SPY_E_INVALID_ARG);
    assert_non_null(strstr(spy_session_error(s), "'x'"));
    assert_int_equal(spy_session_run(s, NULL, outs), SPY_E_INVALID_ARG);
    assert_true(spy_model_session_bytes(m) >= 1677721);
    assert_string_equal(spy_model_meta(m), "compiler=test\n");
    assert_null(spy_model_selftest_input(m, 0));
    spy_session_free(s);
    spy_model_free(m);
    free(b);
    assert_int_equal(spy_crc32c(0, "123456789", 9), 0xE3069283u);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pointwise),         cmocka_unit_test(test_matmul),
        cmocka_unit_test(test_gather),            cmocka_unit_test(test_vector_unit),
        cmocka_unit_test(test_threads_invariant), cmocka_unit_test(test_share_policies),
        cmocka_unit_test(test_corrupt_container),
        cmocka_unit_test(test_verifier),          cmocka_unit_test(test_bad_args),
        cmocka_unit_test(test_ring),
        cmocka_unit_test(test_int_ops),           cmocka_unit_test(test_load_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
