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
#include <stddef.h>
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
#define RT_HOT __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define RT_HOT
#endif

/* Bytes allocated past lx_budget_bytes in every scratchpad, so vector kernels may
 * read whole vectors past the end of a verified row (the extra lanes are dropped). */
#define RT_LX_SLACK 64

/* Bytes of a host thread's MATMUL packing buffer (RtCore.pack). */
#define RT_PACK_BYTES (512u << 10)

/* Bytes allocated past the packing buffer, as RT_LX_SLACK past a scratchpad: a kernel
 * may store a whole vector where only its first lanes are wanted by reading the rest
 * and writing them back unchanged (rt_kern_mm256.c: a masked store costs about 13
 * cycles on AMD Zen 3). Both buffers are the host thread's own. */
#define RT_PACK_SLACK 64

/* Bytes of a host thread's cache of one packed MATMUL A operand (RtCore.acache,
 * rt_acache.c): room for bert_base's and the LLMs' activations. */
#define RT_ACACHE_BYTES (4u << 20)

enum { RT_XOK = 0, RT_XERR_INDEX = 1, RT_XERR_DIVZERO = 2 };

/* DRAM bytes [lo, hi) of segment seg that a kernel writes (rt_acache.c); seg
 * RT_WRITES_ANY: bytes not known (a SCATTER, too many STOREs). */
#define RT_WRITES_ANY UINT32_MAX
typedef struct RtWrite {
    uint32_t seg;
    int64_t lo, hi;
} RtWrite;

/* Which A operand a host thread's acache holds (or last saw): its DRAM address, row
 * stride, rows, k and the k block of the packing; a NULL: none. */
typedef struct {
    const void *a;
    size_t lda;
    uint32_t m, k, kb;
} RtAKey;

/* rt_apre.c: a session's copies of constant MATMUL operands (A, or a plain B) in a
 * kernel's layout, at most RT_APRE_MAX bytes of them. */
#define RT_APRE_MAX ((size_t)1 << 30)
#define RT_APRE_CHAN 0x80000000u /* RtAKey.kb of a transpose for rt_kern_mmc.h (| MMT_VL) */
#define RT_APRE_BPACK 0x40000000u /* RtAKey.kb of a B's packed panels, rt_kern_mmt.h
                                     (| its k block | MMT_VL << 20) */
#define RT_APRE_BROWS 0x20000000u /* RtAKey.kb of a B's rows made contiguous for a
                                     one-row product, rt_kern_mmv.h */
typedef struct RtApre RtApre;
RtApre *rt_apre_create(size_t budget);
void rt_apre_free(RtApre *t);
float *rt_apre_take(RtApre *t, const RtAKey *k, size_t bytes, bool *fill);
void rt_apre_filled(RtApre *t, const RtAKey *k);
/* A host thread's way through the copies (rt_apre_take_on): the copy it read last, and
 * which end of each kernel's list of programs it takes from (side 0: the front). */
typedef struct {
    void *last;
    int side;
} RtApreTrail;
float *rt_apre_take_on(RtApre *t, RtApreTrail *tr, const RtAKey *k, size_t bytes,
                       bool *fill, const float **next, size_t *nbytes);

/* Large zeroed working buffers, in transparent huge pages when huge (rt_huge.c). */
void *rt_huge_alloc(size_t n, bool huge);
void rt_huge_free(void *p, size_t n, bool huge);

/* A window MATMUL's extents and strides, which alone give the offsets of its B rows
 * (rt_kern_mmt.h win_koff): those of the last window are kept (RtCore.koff) for the
 * next core program of the same convolution on the thread. */
typedef struct {
    uint32_t k, ke1, ke2;
    int64_t ks0, ks1, ks2;
} RtKoffKey;
#define RT_KOFF_MAX 16384        /* B rows of the kept offsets, at most */

typedef struct {
    uint8_t *lx;             /* scratchpad of lx_budget_bytes */
    uint8_t *const *seg;     /* DRAM segment base pointers */
    float *pack;             /* RT_PACK_BYTES (+ RT_PACK_SLACK) for the MATMUL kernel,
                                64-aligned; or NULL */
    uint32_t wide;           /* byte offset from lx of 2 * lx_budget_bytes + RT_LX_SLACK
                                bytes where a DLF16 MATMUL widens its operands (C stays
                                in place); 0: none (a temporary buffer is used) */
    uint32_t memo;           /* RtPrep.memo_id of the input patch LX holds (rt_memo.c), 0:
                                none; valid within one schedule entry */
    bool memo_on;            /* a session's core: patches may be reused (rt_memo.c) */
    float *acache;           /* RT_ACACHE_BYTES (+ RT_PACK_SLACK), 64-aligned, for a MATMUL's
                                A packed once for the programs after it, or NULL (rt_acache.c) */
    RtAKey akey;             /* the A acache holds; valid within one schedule entry */
    RtAKey aseen;            /* the A the last MATMUL that could use acache read */
    RtApre *apre;            /* the session's copies of constant A operands (rt_apre.c), or
                                NULL */
    RtApreTrail atrail;      /* this thread's way through them (rt_apre_take_on) */
    int32_t *koff;           /* room for RT_KOFF_MAX B row offsets of a window, those of
                                window koff_key (k 0: none yet), or NULL */
    RtKoffKey koff_key;
    const RtWrite *wr;       /* the DRAM writes of the running kernel (rt_acache.c), nwr of */
    uint32_t nwr;            /* them; wr NULL: A is never taken as stable */
    const int32_t *dims;     /* the symbols' actual sizes when the bundle has guards
                                (isa.h SpyGuard): guarded instructions they skip are not
                                run; NULL: every instruction runs */
    int err;                 /* RT_X* of the first failing instruction */
    int64_t err_value;       /* offending index value */
    uint32_t err_insn;       /* instruction index within the program */
} RtCore;

/* The VEC chain of a MATMUL's epilogue in the form its vector kernels run on a tile
 * of C as they store it (rt_kern_mmp.h), made by rt_fuse.c when every VEC of the chain
 * has one: op[q] computes x = fn(x, y) (pos 0), fn(y, x) (pos 1) or fn(x) (RELU, NEG,
 * ABS), y a float per row of C (row i's at y + i * yrs; an immediate: yrs 0) or a row
 * of floats (element (i, j) at y + i * yrs + 4 j). reg: the operations the micro-kernel
 * runs on its accumulators (RT_PR_*; RT_PR_NONE: through the L1 cache). */
#define RT_POST_MAX 8
enum { RT_PO_NONE, RT_PO_SCALAR, RT_PO_ROW };
enum { RT_PR_NONE, RT_PR_ADD_S, RT_PR_ADD_R, RT_PR_MUL_S, RT_PR_MUL_R, RT_PR_MAX_S,
       RT_PR_MIN_S, RT_PR_RELU };
typedef struct {
    uint16_t fn;             /* ISA_VF_* */
    uint8_t pos;
    uint8_t kind;            /* RT_PO_*: y */
    uint8_t reg;
    float imm;               /* an immediate's value (y points here) */
    const uint8_t *y;
    int64_t yrs;
} RtPostOp;
typedef struct {
    int n;
    int nreg;                /* the leading operations with a register form */
    RtPostOp op[RT_POST_MAX];
} RtPost;

/* Where a MATMUL planned RT_PH_EPI puts its result: C written to DRAM at c (rows crs
 * bytes apart), where the STORE after it would have put it, not to LX; then, unless
 * tile is NULL, tile(ctx, r0, nr, c0, nc) runs the VEC chain that reads it over rows
 * [r0, r0 + nr) and columns [c0, c0 + nc) of C once they are final (rt_fuse.c). A
 * kernel may instead run post, when not NULL, the same chain, on the tiles it stores. */
typedef struct {
    void (*tile)(void *ctx, uint32_t r0, uint32_t nr, uint32_t c0, uint32_t nc);
    void *ctx;
    uint8_t *c;
    int64_t crs;
    const RtPost *post;
} RtEpi;

/* rt_defer.c: LOADs deferred as views of DRAM (at most RT_MAX_VIEWS per core). A view
 * is rows of rowb bytes in LX; each row is contiguous in DRAM too, or (t) the view is
 * a transpose: LX row r, element j is the DRAM element at src + r * es + j * dcs. */
#define RT_MAX_VIEWS 4
#define RT_DEFER_MIN 2048    /* bytes a LOAD moves at least to be deferred */
typedef struct {
    uint64_t lo, hi;         /* LX bytes [lo, hi) the LOAD writes */
    uint64_t rows, rowb, lrs; /* rows, bytes per row, LX byte stride between rows */
    int64_t drs;             /* DRAM byte stride between rows (>= 0; t: the element size) */
    int64_t dcs;             /* t: DRAM byte stride between the elements of a row (> 0) */
    bool t;
    const uint8_t *src, *shi; /* DRAM address of LX byte lo; end of the DRAM bytes read */
    const SpyDma *x;         /* the LOAD, carried out by rt_dma when needed; NULL: a view
                                joined from several LOADs, carried out by its rows */
    uint32_t seg;            /* the DRAM segment it reads (0: the bundle's constants) */
} RtView;
typedef struct {
    int n;
    RtView v[RT_MAX_VIEWS];
} RtDefer;
/* A MATMUL operand: element (0,0), row stride in elements and, when t, its transpose:
 * element (i,j) at p[j * ld + i]; seg: the DRAM segment it is read from (RT_SEG_LX:
 * read in LX). */
#define RT_SEG_LX UINT32_MAX
typedef struct {
    const uint8_t *p;
    size_t ld;
    bool t;
    uint32_t seg;
} RtOperand;
void rt_dma_span(const SpyDma *x, bool lx, int64_t *lo, int64_t *hi);
/* Byte span [lo, hi) relative to its base of rows x cols elements of es bytes, strides
 * rs and cs elements (any signs); lo = hi = 0 when empty. */
void rt_span2(uint64_t rows, int64_t rs, uint64_t cols, int64_t cs, unsigned es, int64_t *lo,
              int64_t *hi);
void rt_defer_load(RtCore *c, RtDefer *d, const SpyDma *x);
struct RtPrep;
void rt_defer_rows(RtCore *c, RtDefer *d, const SpyDma *x, const struct RtPrep *p);
void rt_copy_rows(uint8_t *dst, int64_t ds, const uint8_t *src, int64_t ss, uint64_t rows,
                  size_t rowb);
bool rt_defer_useless(const SpyInsn *code, uint32_t n);
void rt_defer_before(RtCore *c, RtDefer *d, const SpyInsn *in, const struct RtPrep *p);
/* A STORE whose rows pending views hold, copied from their DRAM (rt_defer_store.c):
 * true when done; false: nothing done. */
bool rt_defer_store(RtCore *c, const RtDefer *d, const SpyDma *x);
void rt_defer_flush_lx(RtCore *c, RtDefer *d, int64_t lo, int64_t hi);
void rt_defer_flush_dram(RtCore *c, RtDefer *d, const uint8_t *lo, const uint8_t *hi);
const uint8_t *rt_defer_rows_src(const RtDefer *d, int64_t a, uint64_t rows, int64_t rs,
                                 uint64_t rowb, int64_t *srs);
const uint8_t *rt_defer_window(const RtCore *c, const RtDefer *d, const SpyMatmul *mm,
                               int64_t *ks0);
RtOperand rt_defer_operand(RtCore *c, RtDefer *d, uint32_t a, uint32_t rows, uint32_t cols,
                           uint32_t ld, unsigned es, bool take_t, bool packed);

/* rt_prep.c: the execution plan of an instruction, computed once at load from the
 * code alone (the instruction and those after it up to its program's end). */
enum {
    RT_PH_NONE = 0,          /* run as the instruction says */
    RT_PH_ROWS = 1,          /* LOAD / STORE: rows of contiguous bytes (see RtPrep) */
    RT_PH_TAPS = 2,          /* VEC: a run of depthwise taps (rt_vec_taps) */
    RT_PH_POOL = 3,          /* VEC: a run of pooling taps (rt_vec_pool) */
    RT_PH_STRIP = 4,         /* VEC: a run strip-mined over one region (rt_exec.c) */
    RT_PH_FAST = 5,          /* VEC: the direct path of rt_kern_vfast.c, its checks done */
    RT_PH_FILL0 = 6,         /* VFILL: one memset of its bytes (rt_fill.c) */
    RT_PH_GAPS = 7,          /* VFILL: only the bytes the LOADs after it leave (rt_fill.c) */
    RT_PH_FUSE = 8,          /* VEC: a chain of VECs in one pass, maybe with the STORE after
                                it (rt_fuse.c) */
    RT_PH_ONE = 9,           /* VEC: one F32 element, without the general kernel's setup
                                (rt_vec_one) */
    RT_PH_EPI = 10           /* MATMUL: C straight to the DRAM of the STORE run
                                instructions after it (kinds 0), or (kinds 1) of the chain
                                (RT_PH_FUSE) run instructions after it that reads C, after
                                LOADs, the chain run tile by tile with it (rt_exec.c) */
};
typedef struct RtPrep {
    int64_t drs;             /* RT_PH_ROWS: DRAM byte stride between rows (>= 0) */
    uint32_t rows, rowb;     /* RT_PH_ROWS: rows of rowb bytes, at least one; RT_PH_FAST:
                                the VEC's rows of rowb bytes once rows are merged */
    uint32_t lrs;            /* RT_PH_ROWS: LX byte stride between rows (>= 0); the
                                destination's stride is at least rowb; 0 when one row */
    uint32_t merged;         /* RT_PH_ROWS of one row: bytes of the `run` LOADs */
    uint32_t run;            /* instructions carried out together from this one (>= 1):
                                one-row RT_PH_ROWS LOADs continuing each other in LX and
                                DRAM, or the VEC run of RT_PH_TAPS / POOL / STRIP */
    uint8_t how;             /* RT_PH_* */
    bool useless;            /* LOAD: rt_defer_useless holds (for every LOAD of the run) */
    uint32_t memo_len;       /* > 0: the first of a reusable input patch's memo_len LOADs
                                and VFILLs (rt_memo.c); 0 elsewhere */
    uint32_t memo_id;        /* its patch: equal ids load equal LX bytes (> 0) */
    uint32_t memo_lo, memo_hi; /* the LX bytes [lo, hi) the patch's instructions own */
    uint8_t kinds;           /* RT_PH_FAST: operand kinds (rt_kern_vfast.c); RT_PH_FUSE: 1
                                when the run ends with the STORE it takes; RT_PH_EPI: 1
                                with a chain */
    uint16_t keep;           /* RT_PH_FUSE: bit i, VEC i of the run writes its LX region */
} RtPrep;
void rt_prep_code(const SpyInsn *code, uint64_t n, RtPrep *p);
/* The plan of the MATMUL at code[0] (n instructions to its program's end), from the
 * plans of those after it: RT_PH_EPI where C may go straight to a STORE's DRAM. */
void rt_prep_epi(const SpyInsn *code, uint32_t n, RtPrep *p);

/* rt_memo.c: whether the patch planned at p is what LX holds at the end of a program
 * (no view of d pending over its bytes). */
bool rt_memo_kept(const RtDefer *d, const RtPrep *p);

/* rt_acache.c: the start of a schedule entry (its kernel's writes wr[0..nwr), NULL:
 * not listed; the cache forgotten); whether A's DRAM bytes [p, p + n) are stable within the running kernel
 * (no STORE or SCATTER of it writes them); the cached packing of the A of key k, NULL
 * when the thread has not seen it twice running (*fill: the caller packs it there). */
void rt_acache_entry(RtCore *c, const RtWrite *wr, uint32_t nwr);
bool rt_acache_stable(const RtCore *c, const uint8_t *p, size_t n);
float *rt_acache_take(RtCore *c, const RtAKey *k, bool *fill);

/* rt_exec.c: runs n instructions (prep: their plans, or NULL to plan them first);
 * returns RT_XOK or the error (details in c). */
int rt_exec_program(RtCore *c, const SpyInsn *code, uint32_t n);
int rt_exec_prepared(RtCore *c, const SpyInsn *code, const RtPrep *prep, uint32_t n);
/* The plan of the VEC code[0] (how, run) as rt_exec_prepared runs it; n: instructions
 * to the program's end, p: their plans, those of the LOADs and STOREs made. */
void rt_exec_prep_vec(const SpyInsn *code, uint32_t n, RtPrep *p);

/* rt_fuse.c: a chain of F32 VECs of one shape (at most RT_FUSE_MAX) in one pass, with
 * the STORE after it when that stores its result: the plan at code[0..n) (p: their
 * plans, the STOREs' made; false when none), and its run. */
#define RT_FUSE_MAX 16
bool rt_fuse_prep(const SpyInsn *code, uint32_t n, RtPrep *p);
/* rt_fuse_prep for a region of at least min bytes (rt_fuse_prep's own minimum is where
 * a chain pays for its setup; rt_stitch.c runs chains over many programs' regions). */
bool rt_fuse_prep_min(const SpyInsn *code, uint32_t n, RtPrep *p, uint64_t min);
void rt_fuse_run(RtCore *c, RtDefer *d, const SpyInsn *code, const RtPrep *p);
/* rt_fuse.c: whether the chain planned at code (RT_PH_FUSE, plans p) may run tile by
 * tile as the MATMUL mm computes its input, all of C (A and B at LX bytes [alo, ahi),
 * [blo, bhi)); and running it so: body(c, d, e, arg) with the tiles' runner e. */
bool rt_lx_live(const SpyInsn *code, uint32_t n, int64_t lo, int64_t hi);
bool rt_fuse_epi_ok(const SpyInsn *code, uint32_t n, const RtPrep *p, const SpyMatmul *mm,
                    int64_t alo, int64_t ahi, int64_t blo, int64_t bhi);
void rt_fuse_around(RtCore *c, RtDefer *d, const SpyInsn *code, const RtPrep *p,
                    void (*body)(RtCore *, RtDefer *, const RtEpi *, void *), void *arg);
/* The chain planned at code (RT_PH_FUSE ending with its STORE, plans p) in post form
 * (rt_kern_mmp.h) into post, its operands left in LX: ylx[i] the LX byte offset of op
 * i's scalar per row or row (post->op[i].yrs its row stride; UINT32_MAX: an immediate,
 * op[i].imm), post->op[i].y unset; the chain's input region at LX x, rows xrs bytes
 * apart. False when the chain has no post form (rt_stitch.c). */
bool rt_fuse_post_lx(const SpyInsn *code, const RtPrep *p, RtPost *post, uint32_t *ylx,
                     uint32_t *x, int64_t *xrs);

/* rt_stitch.c: a matrix-product kernel's programs run as a few large products. */
typedef struct {
    uint32_t seg;
    int64_t off, pitch;      /* row r of the operand at byte off + r * pitch of seg */
} RtStOp;
typedef struct RtStitch {
    SpyMatmul mm;            /* one program's MATMUL: a block of m x n of C */
    uint32_t mb, nb;         /* the programs: mb by nb blocks */
    RtStOp a, b, c;          /* block (0, 0)'s A, B and C */
    bool aconst, bconst;     /* A, B in the bundle's constants */
    RtPost post;             /* the epilogue (npost operations; 0: none), its operands */
    int npost;               /* placed at run time: op i's in y[yop[i]] (-1: none) */
    int8_t yop[RT_POST_MAX];
    RtStOp y[RT_POST_MAX];
    uint32_t *cell;          /* [mb * nb] block (i, j)'s program at i * nb + j: its index
                                among the kernel's active programs (m->active order) */
} RtStitch;
typedef struct {
    uint32_t r0, r1, c0, c1; /* blocks [r0, r1) x [c0, c1) */
} RtStBox;
bool rt_stitch_host(void);   /* the host has the vector kernels stitched products need */
/* Items of a stitched kernel for about `want` of them, and item's blocks. */
uint32_t rt_stitch_items(const RtStitch *st, uint32_t want);
void rt_stitch_box(const RtStitch *st, uint32_t want, uint32_t item, RtStBox *b);
/* Runs blocks b of st on core c (its DRAM segments, packing buffers; LX untouched). */
void rt_stitch_run(RtCore *c, const RtStitch *st, const RtStBox *b);

/* rt_dma.c */
/* An N-d copy with unit dims dropped and dims contiguous on both sides merged. */
typedef struct {
    int n;                           /* dims after collapsing, outermost first */
    uint64_t dim[ISA_MAX_DIMS];
    int64_t ss[ISA_MAX_DIMS];        /* source strides (x esize) */
    int64_t ds[ISA_MAX_DIMS];        /* destination strides (x esize) */
} RtCopyPlan;
bool rt_plan_copy(RtCopyPlan *p, const uint32_t *dims, const int32_t *sst, const int32_t *dst,
                  unsigned esize);
void rt_dma(RtCore *c, const SpyDma *d, bool store);
/* A verified LOAD / STORE with ISA_F_F32 (rt_dma_f32.c): float32 elements at dram,
 * DLFloat16 at lx; LOAD rounds, STORE widens (exact). */
void rt_dma_f32(uint8_t *lx, uint8_t *dram, const SpyDma *d, bool store);
int rt_gather(RtCore *c, const SpyGather *g);

/* rt_scatter.c */
void rt_scatter(RtCore *c, const SpyScatter *s);

/* rt_kern_matmul.c: a MATMUL reading A and B from LX, or from where s says (element
 * (0,0) and row strides in elements: LX, or DRAM for a deferred LOAD; bt: B given
 * transposed, element (k,j) at b[j * ldb + k], only where rt_mm_takes_bt; bdram: B
 * read from DRAM). */
typedef struct {
    const uint8_t *a, *b;
    size_t lda, ldb;
    bool bt;
    bool bdram;              /* B is read from DRAM (a deferred LOAD's view, maybe not in
                                the host's caches); false: in LX, just written */
    bool astable;            /* A is read from DRAM that no program of the running kernel
                                writes: its packing may be kept in RtCore.acache */
    bool bconst;             /* B is read from the bundle's constants (a weight, streamed
                                from DRAM once an inference), not from the arena */
    bool aconst;             /* A is read from the bundle's constants, in place (never
                                written): its transpose may be kept (rt_apre.c) */
    const RtEpi *epi;        /* run over every tile of C once it is final, or NULL */
    int64_t bks0;            /* a window B read from DRAM (rt_defer_window): the stride of
                                its first k dim there; 0: B in LX, mm's strides */
} RtMmSrc;
void rt_matmul(RtCore *c, const SpyMatmul *mm);
void rt_matmul_src(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s);
bool rt_mm_takes_bt(const RtCore *c, const SpyMatmul *mm);
bool rt_mm_packs(const RtCore *c, const SpyMatmul *mm);
bool rt_mm_win_takes_a(const RtCore *c, const SpyMatmul *mm);
void rt_mm_win_range(const SpyMatmul *mm, size_t es, int64_t *lo, int64_t *hi);

/* rt_kern_matmul.c: host instruction-set features (RT_HOST_*), and the portable
 * MATMUL (for F32 the same bits as the vector kernels). */
enum { RT_HOST_KNOWN = 1, RT_HOST_AVX512 = 2, RT_HOST_AVX2_FMA = 4 };
bool rt_host_has(unsigned f);
void rt_mm_portable(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s);

/* rt_kern_mm512.c / rt_kern_mm256.c (built for x86-64 with GCC-style intrinsics only):
 * F32 MATMUL with AVX-512F / with AVX2 and FMA; false (nothing done) on hosts without
 * them. */
#if defined(__x86_64__) && defined(__GNUC__)
#define RT_HAVE_X86_KERNELS 1
bool rt_mm_f32_512(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s);
bool rt_mm_f32_256(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s);
bool rt_mm_f32_512_packs(const RtCore *c, const SpyMatmul *mm);
bool rt_mm_f32_256_packs(const RtCore *c, const SpyMatmul *mm);
/* rt_kern_mmi8.c: I8 -> I32 MATMUL with AVX-512BW (VNNI) or AVX2; false (nothing done)
 * on hosts without them or for a B given transposed. */
bool rt_mm_i8_fast(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s);
/* rt_copy512.c: nr rows of nb contiguous bytes (byte strides ds, ss; no overlap) with
 * AVX-512F moves; false (nothing done) on hosts without it, or rows whose length it
 * does not take. */
bool rt_copy_rows512(uint8_t *d, int64_t ds, const uint8_t *s, int64_t ss, uint64_t nr,
                     size_t nb);
/* rt_kern_vpool512.c: one row of a pooling run (rt_kern_vpool.c's pool_row; fn the VEC
 * function: MAX, MIN or ADD) with AVX-512F; false (nothing done) on hosts without it or
 * for a column stride other than 1 and 2. */
bool rt_pool_row512(uint8_t *d, const uint8_t *const *s, uint32_t ns, int64_t cs, uint32_t n,
                    int fn);
/* Where rt_pool_grid512 reads a grid's tap rows: row r's element c at s + (r - r0) * srs
 * + 4 * (c - c0) for rows [r0, r1) and columns [c0, c1); every other element is v (the
 * border a VFILL left in LX around a deferred LOAD's rows, all of one value:
 * rt_kern_vpool.c). Without a border: r0 = c0 = 0, r1 and c1 past the grid. */
typedef struct {
    const uint8_t *s;
    int64_t srs;
    uint64_t r0, r1, c0, c1;
    float v;
} RtPoolSrc;
/* rt_kern_vpool512.c: a MAX / MIN pooling run over a grid of kh x kw taps (tap (dy, dx)
 * of output row i, column j: element j * cs + dx of tap row i * sh + dy of s, sh < kh),
 * rows x n results at d (row stride drs bytes), each tap row folded once for the
 * output rows that share it; false when the host lacks AVX-512, the grid is not one
 * it takes, or a tap may be a NaN (then the results are not all written: run the taps
 * one by one instead). */
bool rt_pool_grid512(uint8_t *d, int64_t drs, const RtPoolSrc *s, uint32_t kh, uint32_t kw,
                     uint32_t sh, int64_t cs, uint32_t rows, uint32_t n, int fn);
/* rt_kern_vpool.c: a pooling run with its taps read in place from deferred LOADs' DRAM
 * where they lie (AVX-512 hosts); false (nothing done) otherwise. */
bool rt_vec_pool_views(RtCore *c, RtDefer *d, const SpyInsn *code, uint32_t nt);
#else
#define RT_HAVE_X86_KERNELS 0
#endif

/* rt_kern_vfast.c: the common F32 VEC steps computed in place; false (nothing done)
 * when v does not qualify. */
bool rt_vec_fast(RtCore *c, const SpyVec *v);
bool rt_vec_fast_prep(const SpyVec *v, RtPrep *p);
void rt_vec_fast_prepared(RtCore *c, const SpyVec *v, const RtPrep *p);

/* rt_kern_vec.c */
int rt_vec(RtCore *c, const SpyVec *v);
/* An F32 VEC of one element: whether it qualifies (RT_PH_ONE), and running it. */
bool rt_vec_one_ok(const SpyVec *v);
void rt_vec_one(RtCore *c, const SpyVec *v);
/* rt_kern_vtaps.c: depthwise-convolution taps (a MUL or FMA, then FMAs into the same
 * region): the length of the run at code[0..n) (0: none, at most RT_TAPS_MAX), and
 * running it in one pass. */
#define RT_TAPS_MAX 32
uint32_t rt_vec_taps_run(const SpyInsn *code, uint32_t n);
void rt_vec_taps(RtCore *c, const SpyInsn *code, uint32_t nt);
/* rt_kern_vpool.c: pooling taps (F32 VEC MAX / MIN of two taps, then of the result and
 * one more tap each): the number of instructions of the run at code[0..n) (0: none,
 * fewer than RT_TAPS_MAX), and running it in one pass. */
uint32_t rt_vec_pool_run(const SpyInsn *code, uint32_t n);
void rt_vec_pool(RtCore *c, const SpyInsn *code, uint32_t nt);
/* The same run by the portable rows only (hosts without AVX-512; tests on hosts with
 * it, which rt_vec_pool never takes there). */
void rt_vec_pool_portable(RtCore *c, const SpyInsn *code, uint32_t nt);
void rt_vfill(RtCore *c, const SpyVFill *f);

/* rt_fill.c: the plan of a VFILL (RT_PH_NONE, FILL0 or GAPS) and its run by that plan */
uint8_t rt_vfill_prep(const SpyInsn *code, uint32_t n);
void rt_vfill_planned(RtCore *c, const SpyVFill *f, const SpyInsn *next, uint32_t n,
                      uint8_t how);

/* rt_kern_red.c */
void rt_vreduce(RtCore *c, const SpyVReduce *r);
void rt_vscan(RtCore *c, const SpyVScan *s);

/* rt_fpconv.c: narrow float storage types <-> float32 (round to nearest even) */
float rt_f16_to_f32(uint16_t h);
void rt_f16_to_f32_n(float *dst, const uint8_t *src, size_t n); /* contiguous, exact */
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
