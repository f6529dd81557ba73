/* rt_kern_mmt.h: the body of the F32 MATMUL tile kernel, written once for a vector
 * width and included by rt_kern_mm512.c (AVX-512F) and rt_kern_mm256.c (AVX2 + FMA).
 *
 * The includer defines, before including this file:
 *   MMT_TARGET     the function attribute enabling the instruction set
 *   MMT_VL         floats per vector; MMT_V the vector type, MMT_M its lane-mask type
 *   MMT_MR         rows of the register micro-kernel (MMT_MR x 2 accumulators)
 *   MMT_LANES(n)   mask of the first n lanes (any n: clamped to 0..MMT_VL)
 *   MMT_LOADM(m, p), MMT_STOREM(p, m, v)   masked unaligned load (zeroing) / store
 *   MMT_LOAD(p), MMT_STORE(p, v)           aligned load / store
 *   MMT_SET1(f), MMT_ZERO(), MMT_FMA(a, b, c) = a * b + c with one rounding
 *   MMT_NAME(x)    the name of this instance's function x
 *   MMT_FEATURE    the RT_HOST_* bits the host needs; MMT_EXPORT the exported entry
 *
 * Blocked like a BLAS GEMM for the small products an LX tile holds: k is cut into
 * blocks of MMT_KC rows; for each block the columns of B, MMT_NC at a time, are packed
 * into contiguous zero-padded panels of 2 vectors' width (MMT_KC x NR floats: the panel
 * a micro-kernel call streams stays in the L1 cache), then every block of MMT_MR rows
 * of C runs over all panels, broadcasting A straight from its rows (those MMT_MR rows
 * stay in L1 across the panels). The last rows use the same micro-kernel with fewer
 * rows, the last columns are masked at n. Products with fewer than MMT_PACK_M rows
 * (8 row blocks) read B in place, all of k at once, through the same micro-kernel with
 * masked loads: packing costs more than it saves when few row blocks reuse a panel
 * (measured on the tile shapes of ResNet-50 and BERT; vector-matrix products of a
 * decode step are the extreme case).
 *
 * isa.md semantics: every C element accumulates its products in increasing k from 0
 * (or from the old C with ACCUM), each step one fused multiply-add. Between k blocks
 * the running sum is stored in C and reloaded, which is exact, so the result is bit
 * for bit that of the scalar loop in rt_kern_matmul.c, on every host.
 */

#define MMT_NR (2 * MMT_VL)                /* columns of a packed panel */
#define MMT_KC 128                         /* k rows of a packed panel */
#define MMT_NC (RT_PACK_BYTES / (4 * MMT_KC)) /* columns of B packed at a time */
#define MMT_PACK_M (8 * MMT_MR)            /* fewer rows of C: B is read in place */
#define MMT_INLINE MMT_TARGET __attribute__((always_inline)) static inline

typedef struct {
    const rt_f32 *a;         /* element (0,0) of A (may be unaligned) */
    const float *b;          /* element (0,0) of B */
    float *c;
    size_t lda, ldb, ldc;    /* row strides in elements */
    uint32_t m, n, k;
    bool zero;               /* start from 0 instead of the old C */
} MMT_NAME(Args);

/* Packs B[k0..k0+kc, j0..j0+nc) into bp (kc rows of NR floats, columns past nc 0). */
MMT_INLINE void MMT_NAME(pack_b)(const MMT_NAME(Args) *x, float *bp, uint32_t k0,
                                  uint32_t kc, size_t j0, int64_t nc) {
    MMT_M m0 = MMT_LANES(nc), m1 = MMT_LANES(nc - MMT_VL);
    const float *b = x->b + k0 * x->ldb + j0;
    for (uint32_t k = 0; k < kc; k++, b += x->ldb, bp += MMT_NR) {
        MMT_STORE(bp, MMT_LOADM(m0, b));
        MMT_STORE(bp + MMT_VL, MMT_LOADM(m1, b + MMT_VL));
    }
}

/* C[i0..i0+R, j0..j0+NR) over k rows [k0, k0+kc) of A and kc rows of B at b, ldb
 * apart (a packed panel: ldb = NR, m0 / m1 only for C; in place: ldb of B, and the
 * masks also keep B's loads inside its columns). zero starts from 0 instead of C. */
MMT_INLINE void MMT_NAME(micro)(const MMT_NAME(Args) *x, const float *b, size_t ldb,
                                 size_t i0, size_t j0, uint32_t k0, uint32_t kc, bool zero,
                                 MMT_M m0, MMT_M m1, bool packed, const int R) {
    MMT_V acc[MMT_MR][2];
    float *c = x->c + i0 * x->ldc + j0;
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        acc[r][0] = zero ? MMT_ZERO() : MMT_LOADM(m0, c + r * x->ldc);
        acc[r][1] = zero ? MMT_ZERO() : MMT_LOADM(m1, c + r * x->ldc + MMT_VL);
    }
    const rt_f32 *a = x->a + i0 * x->lda + k0;
    size_t lda = x->lda;
    for (uint32_t k = 0; k < kc; k++, b += ldb) {
        MMT_V b0 = packed ? MMT_LOAD(b) : MMT_LOADM(m0, b);
        MMT_V b1 = packed ? MMT_LOAD(b + MMT_VL) : MMT_LOADM(m1, b + MMT_VL);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            MMT_V av = MMT_SET1(a[r * lda + k]);
            acc[r][0] = MMT_FMA(av, b0, acc[r][0]);
            acc[r][1] = MMT_FMA(av, b1, acc[r][1]);
        }
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        MMT_STOREM(c + r * x->ldc, m0, acc[r][0]);
        MMT_STOREM(c + r * x->ldc + MMT_VL, m1, acc[r][1]);
    }
}

/* One function per row count, so each keeps its accumulators in registers. */
#define MMT_MICRO(R)                                                                     \
    MMT_TARGET static void MMT_NAME(micro_##R)(const MMT_NAME(Args) *x, const float *b,   \
                                               size_t ldb, size_t i0, size_t j0,         \
                                               uint32_t k0, uint32_t kc, bool zero,      \
                                               MMT_M m0, MMT_M m1, bool packed) {        \
        if (packed)                                                                      \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, true, R);           \
        else                                                                             \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, false, R);          \
    }

MMT_MICRO(1)
MMT_MICRO(2)
MMT_MICRO(3)
MMT_MICRO(4)
MMT_MICRO(5)
MMT_MICRO(6)
#if MMT_MR == 12
MMT_MICRO(7)
MMT_MICRO(8)
MMT_MICRO(9)
MMT_MICRO(10)
MMT_MICRO(11)
MMT_MICRO(12)
#elif MMT_MR != 6
#error "MMT_MR must be 6 or 12"
#endif

typedef void (*MMT_NAME(MicroFn))(const MMT_NAME(Args) *, const float *, size_t, size_t,
                                  size_t, uint32_t, uint32_t, bool, MMT_M, MMT_M, bool);
static const MMT_NAME(MicroFn) MMT_NAME(micros)[MMT_MR + 1] = {
    NULL, MMT_NAME(micro_1), MMT_NAME(micro_2), MMT_NAME(micro_3), MMT_NAME(micro_4),
    MMT_NAME(micro_5), MMT_NAME(micro_6),
#if MMT_MR == 12
    MMT_NAME(micro_7), MMT_NAME(micro_8), MMT_NAME(micro_9), MMT_NAME(micro_10),
    MMT_NAME(micro_11), MMT_NAME(micro_12),
#endif
};

/* Columns [j0, j0 + nc) of C over k rows [k0, k0 + kc): packs those columns of B
 * into panels, then runs every row block of C over all of them. */
MMT_TARGET static void MMT_NAME(packed_block)(const MMT_NAME(Args) *x, float *pack,
                                              uint32_t k0, uint32_t kc, size_t j0,
                                              size_t nc) {
    size_t np = (nc + MMT_NR - 1) / MMT_NR;
    bool zero = x->zero && k0 == 0;
    for (size_t p = 0; p < np; p++)
        MMT_NAME(pack_b)(x, pack + p * kc * MMT_NR, k0, kc, j0 + p * MMT_NR,
                         (int64_t)nc - (int64_t)(p * MMT_NR));
    for (uint32_t i0 = 0; i0 < x->m; i0 += MMT_MR) {
        MMT_NAME(MicroFn) f = MMT_NAME(micros)[x->m - i0 < MMT_MR ? x->m - i0 : MMT_MR];
        for (size_t p = 0; p < np; p++) {
            int64_t left = (int64_t)nc - (int64_t)(p * MMT_NR);
            f(x, pack + p * kc * MMT_NR, MMT_NR, i0, j0 + p * MMT_NR, k0, kc, zero,
              MMT_LANES(left), MMT_LANES(left - MMT_VL), true);
        }
    }
}

/* Runs a verified F32 MATMUL mm on core c with this instance's instruction set. */
MMT_TARGET static void MMT_NAME(run)(RtCore *c, const SpyMatmul *mm) {
    MMT_NAME(Args) x = {(const rt_f32 *)(c->lx + mm->a), (const float *)(c->lx + mm->b),
                        (float *)(c->lx + mm->c), mm->lda, mm->ldb, mm->ldc, mm->m, mm->n,
                        mm->k, !(mm->flags & ISA_F_ACCUM)};
    if (mm->m < MMT_PACK_M || !c->pack) { /* in place, all k at once */
        for (uint32_t i0 = 0; i0 < x.m; i0 += MMT_MR) {
            uint32_t rows = x.m - i0 < MMT_MR ? x.m - i0 : MMT_MR;
            for (size_t j0 = 0; j0 < x.n; j0 += MMT_NR) {
                int64_t left = (int64_t)x.n - (int64_t)j0;
                MMT_NAME(micros)[rows](&x, x.b + j0, x.ldb, i0, j0, 0, x.k, x.zero,
                                       MMT_LANES(left), MMT_LANES(left - MMT_VL), false);
            }
        }
        return;
    }
    for (uint32_t k0 = 0; k0 < x.k || k0 == 0; k0 += MMT_KC) {
        uint32_t kc = x.k - k0 < MMT_KC ? x.k - k0 : MMT_KC;
        for (size_t j0 = 0; j0 < x.n; j0 += MMT_NC)
            MMT_NAME(packed_block)(&x, c->pack, k0, kc, j0,
                                   x.n - j0 < MMT_NC ? x.n - j0 : MMT_NC);
        if (x.k == 0)
            break;
    }
}

/* Runs a verified F32 MATMUL with this instance's instruction set; false (nothing
 * done) on a host without it. */
bool MMT_EXPORT(RtCore *c, const SpyMatmul *mm) {
    if (!rt_host_has(MMT_FEATURE))
        return false;
    MMT_NAME(run)(c, mm);
    return true;
}
