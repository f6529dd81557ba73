/* rt_exec.h: private interface of the instruction interpreter and its tile kernels.
 *
 * A core program runs on one host thread against an RtCore: the scratchpad that
 * thread owns and the session's DRAM segment base pointers. Every instruction was
 * verified at load, so the kernels do no bounds checks; they only detect run-time
 * data errors (GATHER index out of range, integer division by zero).
 */
#ifndef SPYRT_RT_EXEC_H
#define SPYRT_RT_EXEC_H

#include <stdbool.h>
#include <stdint.h>

#include "isa.h"

/* Unaligned, alias-anything element types for LX and DRAM accesses. */
typedef float rt_f32 __attribute__((aligned(1), may_alias));
typedef int32_t rt_i32 __attribute__((aligned(1), may_alias));
typedef int16_t rt_i16 __attribute__((aligned(1), may_alias));
typedef int64_t rt_i64 __attribute__((aligned(1), may_alias));

/* Hot loops get an AVX2 clone, chosen at load time by the dynamic linker. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(SPY_DEBUG)
#define RT_HOT __attribute__((target_clones("avx2", "default")))
#else
#define RT_HOT
#endif

/* Bytes allocated past lx_budget_bytes in every scratchpad, so vector kernels may
 * read whole vectors past the end of a verified row (the extra lanes are dropped). */
#define RT_LX_SLACK 64

/* Bytes of a host thread's MATMUL packing buffer (RtCore.pack). */
#define RT_PACK_BYTES (512u << 10)

enum { RT_XOK = 0, RT_XERR_INDEX = 1, RT_XERR_DIVZERO = 2 };

typedef struct {
    uint8_t *lx;             /* scratchpad of lx_budget_bytes */
    uint8_t *const *seg;     /* DRAM segment base pointers */
    float *pack;             /* RT_PACK_BYTES for the MATMUL kernel, 64-aligned; or NULL */
    uint32_t wide;           /* byte offset from lx of 2 * lx_budget_bytes + RT_LX_SLACK
                                bytes where a DLF16 MATMUL widens its operands (C stays
                                in place); 0: none (a temporary buffer is used) */
    int err;                 /* RT_X* of the first failing instruction */
    int64_t err_value;       /* offending index value */
    uint32_t err_insn;       /* instruction index within the program */
} RtCore;

/* rt_exec.c: runs n instructions; returns RT_XOK or the error (details in c). */
int rt_exec_program(RtCore *c, const SpyInsn *code, uint32_t n);

/* rt_dma.c */
void rt_dma(RtCore *c, const SpyDma *d, bool store);
/* A verified LOAD / STORE with ISA_F_F32 (rt_dma_f32.c): float32 elements at dram,
 * DLFloat16 at lx; LOAD rounds, STORE widens (exact). */
void rt_dma_f32(uint8_t *lx, uint8_t *dram, const SpyDma *d, bool store);
int rt_gather(RtCore *c, const SpyGather *g);

/* rt_scatter.c */
void rt_scatter(RtCore *c, const SpyScatter *s);

/* rt_kern_matmul.c */
void rt_matmul(RtCore *c, const SpyMatmul *mm);

/* rt_kern_matmul.c: host instruction-set features (RT_HOST_*), and the portable
 * MATMUL (for F32 the same bits as the vector kernels). */
enum { RT_HOST_KNOWN = 1, RT_HOST_AVX512 = 2, RT_HOST_AVX2_FMA = 4 };
bool rt_host_has(unsigned f);
void rt_mm_portable(RtCore *c, const SpyMatmul *mm);

/* rt_kern_mm512.c / rt_kern_mm256.c (built for x86-64 with GCC-style intrinsics only):
 * F32 MATMUL with AVX-512F / with AVX2 and FMA; false (nothing done) on hosts without
 * them. */
#if defined(__x86_64__) && defined(__GNUC__)
#define RT_HAVE_X86_KERNELS 1
bool rt_mm_f32_512(RtCore *c, const SpyMatmul *mm);
bool rt_mm_f32_256(RtCore *c, const SpyMatmul *mm);
#else
#define RT_HAVE_X86_KERNELS 0
#endif

/* rt_kern_vfast.c: the common F32 VEC steps computed in place; false (nothing done)
 * when v does not qualify. */
bool rt_vec_fast(RtCore *c, const SpyVec *v);

/* rt_kern_vec.c */
int rt_vec(RtCore *c, const SpyVec *v);
void rt_vfill(RtCore *c, const SpyVFill *f);

/* rt_kern_red.c */
void rt_vreduce(RtCore *c, const SpyVReduce *r);
void rt_vscan(RtCore *c, const SpyVScan *s);

/* rt_fpconv.c: narrow float storage types <-> float32 (round to nearest even) */
float rt_f16_to_f32(uint16_t h);
uint16_t rt_f32_to_f16(float f);
float rt_bf16_to_f32(uint16_t h);
uint16_t rt_f32_to_bf16(float f);

/* rt_vecfn.c: per-function properties shared by verifier, timing and kernels. */
enum { RT_VK_UNARY = 1, RT_VK_BINARY = 2, RT_VK_SELECT = 3 };
int rt_vecfn_arity(int fn);                  /* 1, 2 or 3; 0 if unknown */
bool rt_vecfn_transcendental(int fn);
bool rt_vecfn_compare(int fn);               /* result BOOL from src_dtype operands */
const char *rt_vecfn_name(int fn);
/* Is fn defined for operand dtype dt (result dtype res)? */
bool rt_vecfn_types_ok(int fn, int dt, int src_dt, const char **why);

#endif
