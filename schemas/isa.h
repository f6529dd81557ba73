/* isa.h: the instruction set of the emulated 32-core accelerator.
 *
 * Every instruction is one fixed 128-byte little-endian record (SpyInsn). A core's
 * program for one kernel is a sequence of records ending in ISA_BARRIER. Addresses:
 *   - LX (scratchpad) operands are byte offsets into the core's 2 MiB LX; the
 *     verifier proves that every LX range touched lies inside lx_budget_bytes.
 *   - DRAM operands are (segment, byte offset). Segments are bound at run time
 *     (relocation): segment 0 = constants, 1 = the session's activation arena,
 *     2 + i = the i-th entry of the bundle's I/O binding table (caller buffers or
 *     edge staging buffers). The verifier checks every access against segment sizes.
 * Strides are in elements (may be 0 for broadcast; DRAM strides may be negative).
 * See isa.md for the semantics and timing of each opcode.
 */
#ifndef SPYREC_ISA_H
#define SPYREC_ISA_H

#include <stdbool.h>
#include <stdint.h>

#define ISA_MAX_DIMS 6
#define ISA_SEG_CONST 0u
#define ISA_SEG_ARENA 1u
#define ISA_SEG_IO0 2u

typedef enum {
    ISA_NOP = 0,
    ISA_LOAD = 1,      /* DRAM -> LX, N-d strided copy */
    ISA_STORE = 2,     /* LX -> DRAM, N-d strided copy */
    ISA_GATHER = 3,    /* DRAM rows selected by LX int32 indices -> LX */
    ISA_MATMUL = 4,    /* C[m,n] (+)= A[m,k] B[k,n] on LX tiles (PT array) */
    ISA_VEC = 5,       /* 2-D pointwise vector program step (SFU) */
    ISA_VREDUCE = 6,   /* per-row reduction (SFU) */
    ISA_VFILL = 7,     /* fill LX with a constant (SFU) */
    ISA_VSCAN = 8,     /* per-row inclusive/exclusive prefix sum (SFU) */
    ISA_BARRIER = 9,   /* end of this core's part of a kernel */
    ISA_SCATTER = 10,  /* LX rows -> DRAM rows selected by LX int32 indices (bundle
                          feature SPY_FEAT_SCATTER) */
    ISA_OPCODE_COUNT
} SpyOpcode;

/* Device element types: codes equal ONNX TensorProto.DataType. No 64-bit ints.
 * The float8 / float4 / 4- and 2-bit integer types take one byte per element (formats
 * and conversions in dtconv.h). DLF16 (64, no ONNX code: device only) is the card's
 * 16-bit float, DLFloat16 (dtconv.h), its fp16 storage and compute format. */
enum { ISA_DT_F32 = 1, ISA_DT_U8 = 2, ISA_DT_I8 = 3, ISA_DT_I16 = 5, ISA_DT_I32 = 6,
       ISA_DT_BOOL = 9, ISA_DT_F16 = 10, ISA_DT_BF16 = 16,
       ISA_DT_F8E4M3FN = 17, ISA_DT_F8E4M3FNUZ = 18, ISA_DT_F8E5M2 = 19,
       ISA_DT_F8E5M2FNUZ = 20, ISA_DT_U4 = 21, ISA_DT_I4 = 22, ISA_DT_F4E2M1 = 23,
       ISA_DT_F8E8M0 = 24, ISA_DT_U2 = 25, ISA_DT_I2 = 26, ISA_DT_DLF16 = 64 };

/* ISA_VEC functions. Unary: src[0]. Binary: src[0], src[1] (or imm, flag ISA_F_IMM).
 * SELECT: src[0] bool cond, src[1], src[2]. CAST: src_dtype -> dtype. */
typedef enum {
    ISA_VF_COPY = 0,
    /* unary */
    ISA_VF_NEG, ISA_VF_ABS, ISA_VF_EXP, ISA_VF_LOG, ISA_VF_SQRT, ISA_VF_RSQRT, ISA_VF_RECIP,
    ISA_VF_TANH, ISA_VF_ERF, ISA_VF_SIGMOID, ISA_VF_RELU, ISA_VF_FLOOR, ISA_VF_CEIL,
    ISA_VF_ROUND, ISA_VF_SIN, ISA_VF_COS, ISA_VF_TAN, ISA_VF_ASIN, ISA_VF_ACOS, ISA_VF_ATAN,
    ISA_VF_SINH, ISA_VF_COSH, ISA_VF_ASINH, ISA_VF_ACOSH, ISA_VF_ATANH, ISA_VF_SIGN,
    ISA_VF_NOT, ISA_VF_ISNAN, ISA_VF_ISINF, ISA_VF_SOFTPLUS,
    /* binary */
    ISA_VF_ADD, ISA_VF_SUB, ISA_VF_MUL, ISA_VF_DIV, ISA_VF_POW, ISA_VF_MAX, ISA_VF_MIN,
    ISA_VF_FMOD, ISA_VF_MOD, ISA_VF_EQ, ISA_VF_NE, ISA_VF_LT, ISA_VF_LE, ISA_VF_GT,
    ISA_VF_GE, ISA_VF_AND, ISA_VF_OR, ISA_VF_XOR, ISA_VF_SHL, ISA_VF_SHR, ISA_VF_ATAN2,
    /* ternary / conversion */
    ISA_VF_SELECT, ISA_VF_CAST,
    /* appended (depthwise convolutions): FMA dst = src0 * src1 + src2, src0 and src1 in
     * src_dtype, the addend src2 in dtype (an F32 accumulator; isa.md "VEC") */
    ISA_VF_FMA,
    ISA_VF_COUNT
} SpyVecFn;

/* ISA_VREDUCE functions; ARGMAX/ARGMIN write int32 positions (first occurrence, or
 * last with ISA_F_LAST). */
typedef enum { ISA_RF_SUM = 0, ISA_RF_PROD, ISA_RF_MAX, ISA_RF_MIN, ISA_RF_ARGMAX,
               ISA_RF_ARGMIN, ISA_RF_COUNT } SpyRedFn;

/* flags: each bit's meaning is per instruction (the verifier allows per opcode only its
 * own bits), so one value can name different flags of different instructions. */
#define ISA_F_ACCUM 0x01     /* MATMUL/VREDUCE: combine with existing dst */
#define ISA_F_IMM 0x02       /* VEC: operand src[1] is the immediate `imm` */
#define ISA_F_IMM_A 0x04     /* VEC: operand src[0] is the immediate (e.g. imm - x) */
#define ISA_F_EXCL 0x08      /* VSCAN: exclusive */
#define ISA_F_REV 0x10       /* VSCAN: reverse */
#define ISA_F_LAST 0x20      /* VREDUCE arg: select last occurrence */
#define ISA_F_NOSAT 0x40     /* VEC CAST to float8: overflow gives NaN/inf, not +-max */
#define ISA_F_F32 0x80       /* LOAD/STORE, esize 2: DRAM holds float32, LX DLFloat16 (LOAD
                                rounds, STORE widens; isa.md "LOAD / STORE") */
#define ISA_F_BWIN 0x80      /* MATMUL: B is a window of LX (SpyMatmul.bw_*), ldb 0 */
#define ISA_F_BF8 0x40       /* MATMUL, dtype DLF16: B is F8E4M3FN (a byte an element),
                                widened exactly; the int8/fp8 matrix rate (isa.md) */
#define ISA_F_RING 0x40      /* LOAD: the tile arrives over the core ring from the core of the
                                same kernel that LOADs it from DRAM (isa.md "LOAD / STORE") */

typedef struct {             /* ISA_LOAD / ISA_STORE */
    uint8_t opcode, esize, ndim, flags;
    uint32_t seg;            /* DRAM segment */
    int64_t dram_off;        /* byte offset of element (0,...,0) in the segment */
    uint32_t lx;             /* LX byte offset of element (0,...,0) */
    uint32_t dims[ISA_MAX_DIMS];          /* extents, outermost first; unused = 1 */
    int32_t dram_stride[ISA_MAX_DIMS];    /* elements */
    int32_t lx_stride[ISA_MAX_DIMS];      /* elements, >= 0 */
    uint8_t pad[36];
} SpyDma;

typedef struct {             /* ISA_GATHER: dst row j = table row idx[j] */
    uint8_t opcode, esize, flags, pad0;
    uint32_t seg;
    int64_t dram_off;        /* byte offset of table row 0 */
    int64_t row_stride;      /* elements between table rows */
    uint32_t lx_dst;
    uint32_t lx_idx;         /* int32 indices in LX */
    uint32_t nidx;
    uint32_t row_elems;      /* contiguous elements copied per index */
    uint32_t bound;          /* rows in the table; idx < 0 wraps by +bound; else error */
    uint32_t dst_row_stride; /* elements between dst rows */
    uint8_t pad[80];
} SpyGather;

typedef struct {             /* ISA_SCATTER: table row idx[j] = src row j, for idx[j] in
                                [0, bound); rows with other indices are skipped */
    uint8_t opcode, esize, flags, pad0;
    uint32_t seg;
    int64_t dram_off;        /* byte offset of table row 0 */
    int64_t row_stride;      /* elements between table rows */
    uint32_t lx_src;         /* source rows in LX */
    uint32_t lx_idx;         /* int32 indices in LX */
    uint32_t nidx;
    uint32_t row_elems;      /* contiguous elements copied per index */
    uint32_t bound;          /* rows in the table */
    uint32_t src_row_stride; /* elements between source rows */
    uint8_t pad[80];
} SpyScatter;

typedef struct {             /* ISA_MATMUL */
    uint8_t opcode, dtype, out_dtype, flags;
    uint32_t a, b, c;        /* LX byte offsets */
    uint32_t m, n, k;
    uint32_t lda, ldb, ldc;  /* row strides in elements */
    /* ISA_F_BWIN (else all 0): B[kk, p] is the element at b + sum_d i_d*bw_ks[d] +
     * j_0*bw_ns[0] + j_1*bw_ns[1] (elements), kk = (i_0, i_1, i_2) over bw_kext (row
     * major, product k), p = (j_0, j_1) over bw_next (product n): an implicit-GEMM
     * window of a convolution's input patch (isa.md). */
    uint32_t bw_kext[3];
    int32_t bw_ks[3];
    uint32_t bw_next[2];
    int32_t bw_ns[2];
    uint8_t pad[48];
} SpyMatmul;

typedef struct {             /* ISA_VEC: dst[r,c] = fn(src0[r,c], src1[r,c], src2[r,c]) */
    uint8_t opcode, dtype, src_dtype, flags;
    uint16_t fn, nsrc;
    uint32_t dst;
    uint32_t src[3];
    uint32_t rows, cols;
    int32_t dst_rs;          /* dst row stride (elements); column stride is 1 */
    int32_t src_rs[3];       /* row strides */
    int32_t src_cs[3];       /* column strides: 1, or 0 to broadcast along a row */
    uint32_t imm;            /* bits of the immediate (in src_dtype) */
    uint8_t pad[64];
} SpyVec;

typedef struct {             /* ISA_VREDUCE: dst[r*dst_rs] (op)= reduce_i src[r*src_rs + i*src_cs] */
    uint8_t opcode, dtype, fn, flags;
    uint32_t dst, src;
    uint32_t rows, len;
    int32_t src_rs, src_cs, dst_rs;
    uint8_t pad[96];
} SpyVReduce;

typedef struct {             /* ISA_VFILL: n elements of dtype at dst := value bits */
    uint8_t opcode, dtype, flags, pad0;
    uint32_t dst, n, value;
    uint8_t pad[112];
} SpyVFill;

typedef struct {             /* ISA_VSCAN: per-row prefix sum */
    uint8_t opcode, dtype, flags, pad0;
    uint32_t dst, src, rows, len;
    int32_t src_rs, dst_rs;
    uint8_t pad[100];
} SpyVScan;

typedef struct {             /* ISA_BARRIER: ends the core's program for kernel `kernel` */
    uint8_t opcode, pad0[3];
    uint32_t kernel;
    uint8_t pad[120];
} SpyBarrier;

typedef union {
    uint8_t opcode;
    SpyDma dma;
    SpyGather gather;
    SpyScatter scatter;
    SpyMatmul mm;
    SpyVec vec;
    SpyVReduce red;
    SpyVFill fill;
    SpyVScan scan;
    SpyBarrier bar;
    uint8_t raw[128];
} SpyInsn;

/* Guard (bundle feature SPY_FEAT_GUARDS; isa.md "Guards"): bytes [ISA_GUARD_OFF, 128) of
 * every instruction, padding in each layout above, may hold a SpyGuard. With k = n &
 * ISA_GUARD_NMASK > 0 the instruction is skipped at launch when, for some i < k, the
 * actual size of symbol sym[i] (element sym[i] of the SPY_TF_DIMS input) is at most
 * lo[i]: the compiler proved that then nothing an instruction that does run reads
 * depends on what it writes (it only computes padding). n = 0: always runs.
 * With ISA_GUARD_ROWS set in n (a row clamp; k <= 1, slot 0 its skip condition) the
 * instruction runs only its first R = clamp(dims[sym[1]] * lo[1] - lo[2], 0, E) rows,
 * E being its row extent (spy_insn_rows: VEC, VREDUCE rows, MATMUL m, LOAD / STORE
 * dims[0]), as if written with that extent (R = 0: skipped): row r runs when the size
 * of sym[1] is above floor((r + lo[2]) / lo[1]), the compiler having proved that the
 * rows past R then only compute padding. */
#define ISA_GUARD_OFF 112
#define ISA_GUARD_MAX 3
#define ISA_GUARD_ROWS 0x80      /* n: a row clamp in slots 1 (symbol, rows per step) and 2 */
#define ISA_GUARD_NMASK 0x7f     /* n: the skip conditions */
typedef struct {
    uint8_t n;               /* skip conditions, 0 .. ISA_GUARD_MAX, | ISA_GUARD_ROWS */
    uint8_t sym[ISA_GUARD_MAX];  /* symbols (unused entries 0) */
    uint32_t lo[ISA_GUARD_MAX];  /* skipped when dims[sym[i]] <= lo[i] (unused 0); a row
                                    clamp: lo[1] rows per step (>= 1), lo[2] the offset */
} SpyGuard;

_Static_assert(sizeof(SpyGuard) == 128 - ISA_GUARD_OFF, "SpyGuard size");
_Static_assert(sizeof(SpyDma) == 128, "SpyDma size");
_Static_assert(sizeof(SpyGather) == 128, "SpyGather size");
_Static_assert(sizeof(SpyScatter) == 128, "SpyScatter size");
_Static_assert(sizeof(SpyMatmul) == 128, "SpyMatmul size");
_Static_assert(sizeof(SpyVec) == 128, "SpyVec size");
_Static_assert(sizeof(SpyVReduce) == 128, "SpyVReduce size");
_Static_assert(sizeof(SpyVFill) == 128, "SpyVFill size");
_Static_assert(sizeof(SpyVScan) == 128, "SpyVScan size");
_Static_assert(sizeof(SpyBarrier) == 128, "SpyBarrier size");
_Static_assert(sizeof(SpyInsn) == 128, "SpyInsn size");

/* The guard of instruction in (a copy: the bytes are unaligned padding). */
static inline SpyGuard spy_insn_guard(const SpyInsn *in)
{
    SpyGuard g;
    __builtin_memcpy(&g, in->raw + ISA_GUARD_OFF, sizeof g);
    return g;
}

/* The row extent of in (the extent a row clamp shortens): VEC, VREDUCE rows, MATMUL m,
 * LOAD / STORE dims[0]; 0 for the other instructions (they have no row clamp). */
static inline uint32_t spy_insn_rows(const SpyInsn *in)
{
    switch (in->opcode) {
    case ISA_VEC: return in->vec.rows;
    case ISA_VREDUCE: return in->red.rows;
    case ISA_MATMUL: return in->mm.m;
    case ISA_LOAD:
    case ISA_STORE: return in->dma.dims[0];
    default: return 0;
    }
}

/* in with its row extent set to rows (spy_insn_rows; its instructions only). */
static inline void spy_insn_set_rows(SpyInsn *in, uint32_t rows)
{
    switch (in->opcode) {
    case ISA_VEC: in->vec.rows = rows; break;
    case ISA_VREDUCE: in->red.rows = rows; break;
    case ISA_MATMUL: in->mm.m = rows; break;
    case ISA_LOAD:
    case ISA_STORE: in->dma.dims[0] = rows; break;
    default: break;
    }
}

/* The rows of a row clamp (lo[1] rows per step, offset lo[2]) at size v of its symbol,
 * for an instruction of row extent e. */
static inline uint32_t spy_clamp_rows(int64_t v, uint32_t per, uint32_t off, uint32_t e)
{
    int64_t r = v * (int64_t)per - (int64_t)off;
    return r <= 0 ? 0 : r >= (int64_t)e ? e : (uint32_t)r;
}

/* How many of its rows (spy_insn_rows) a guarded instruction in runs when the symbols
 * have the sizes dims: 0 when skipped, all (UINT32_MAX for an instruction without rows)
 * when it runs as written, else the clamped extent. */
static inline uint32_t spy_guard_rows(const SpyInsn *in, const int32_t *dims)
{
    uint8_t n = in->raw[ISA_GUARD_OFF];
    if (!n)
        return UINT32_MAX;
    SpyGuard g = spy_insn_guard(in);
    for (int i = 0; i < (n & ISA_GUARD_NMASK) && i < ISA_GUARD_MAX; i++)
        if ((int64_t)dims[g.sym[i]] <= (int64_t)g.lo[i])
            return 0;
    if (!(n & ISA_GUARD_ROWS))
        return UINT32_MAX;
    uint32_t e = spy_insn_rows(in);
    uint32_t r = spy_clamp_rows(dims[g.sym[1]], g.lo[1], g.lo[2], e);
    return r == e ? UINT32_MAX : r;
}

/* Whether a guarded instruction in is skipped when the symbols have the sizes dims. */
static inline bool spy_guard_skips(const SpyInsn *in, const int32_t *dims)
{
    return spy_guard_rows(in, dims) == 0;
}

#endif
