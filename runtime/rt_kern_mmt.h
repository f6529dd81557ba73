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
 *   MMT_LOADU(p), MMT_STOREU(p, v)         unaligned load / store
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
 * decode step are the extreme case). A vector-matrix product (MMT_GEMV_ROWS row: a
 * decode step) streams B row by row instead, each row read once, contiguously, from
 * wherever it is (a deferred LOAD's DRAM), with the row of C in the L1 cache. A B given
 * transposed (a deferred transposing LOAD, RtMmSrc.bt; needs the packing buffer) is
 * transposed while it is packed, 4 x 4 blocks at a time; products of at most
 * MMT_GEMV_M rows transpose blocks of MMT_VL of its rows into the packing buffer,
 * MMT_GEMV_K elements at a time, and C's MMT_VL columns accumulate over them in
 * registers.
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
#define MMT_PACK_AHEAD 8                   /* rows of B prefetched ahead when packed */
#define MMT_GEMV_M 4                       /* at most this many rows: B^T taken */
#define MMT_GEMV_ROWS 1                    /* at most this many: B streamed by rows */
#define MMT_GEMV_AHEAD 2                   /* rows of B prefetched ahead when streamed */
#define MMT_GEMV_K 512                     /* k of a transposed block of B */
#define MMT_INLINE MMT_TARGET __attribute__((always_inline)) static inline

typedef struct {
    const rt_f32 *a;         /* element (0,0) of A (may be unaligned) */
    const float *b;          /* element (0,0) of B */
    float *c;
    size_t lda, ldb, ldc;    /* row strides in elements */
    uint32_t m, n, k;
    bool zero;               /* start from 0 instead of the old C */
    bool bt;                 /* B given transposed: element (k,j) at b[j * ldb + k] */
} MMT_NAME(Args);

/* Copies rows k0..k0+kc of columns j0..j0+w of a B given transposed into bp (kc rows
 * of w floats, w a multiple of 4; columns past nj 0), 4 x 4 blocks through vector
 * registers (the bits unchanged). */
MMT_INLINE void MMT_NAME(transpose_in)(const MMT_NAME(Args) *x, float *bp, size_t w,
                                        uint32_t k0, uint32_t kc, size_t j0, size_t nj) {
    size_t nj4 = nj & ~(size_t)3;
    uint32_t kc4 = kc & ~3u;
    for (size_t j = 0; j < nj4; j += 4) {
        const float *row = x->b + (j0 + j) * x->ldb + k0;
        for (uint32_t k = 0; k < kc4; k += 4) {
            __m128 r0 = _mm_loadu_ps(row + k), r1 = _mm_loadu_ps(row + x->ldb + k);
            __m128 r2 = _mm_loadu_ps(row + 2 * x->ldb + k);
            __m128 r3 = _mm_loadu_ps(row + 3 * x->ldb + k);
            _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
            _mm_storeu_ps(bp + k * w + j, r0);
            _mm_storeu_ps(bp + (k + 1) * w + j, r1);
            _mm_storeu_ps(bp + (k + 2) * w + j, r2);
            _mm_storeu_ps(bp + (k + 3) * w + j, r3);
        }
        for (uint32_t k = kc4; k < kc; k++)
            for (size_t q = j; q < j + 4; q++)
                bp[k * w + q] = row[(q - j) * x->ldb + k];
    }
    for (size_t j = nj4; j < w; j++) {   /* the last columns; those past nj 0 */
        const float *row = x->b + (j0 + j) * x->ldb + k0;
        for (uint32_t k = 0; k < kc; k++)
            bp[k * w + j] = j < nj ? row[k] : 0.0f;
    }
}

/* Packs B[k0..k0+kc, j0..j0+nc) into bp (kc rows of NR floats, columns past nc 0). */
MMT_INLINE void MMT_NAME(pack_b)(const MMT_NAME(Args) *x, float *bp, uint32_t k0,
                                  uint32_t kc, size_t j0, int64_t nc) {
    if (x->bt) {
        MMT_NAME(transpose_in)(x, bp, MMT_NR, k0, kc, j0,
                               nc < 0 ? 0 : nc > MMT_NR ? MMT_NR : (size_t)nc);
        return;
    }
    MMT_M m0 = MMT_LANES(nc), m1 = MMT_LANES(nc - MMT_VL);
    const float *b = x->b + k0 * x->ldb + j0;
    for (uint32_t k = 0; k < kc; k++, b += x->ldb, bp += MMT_NR) {
        if (k + MMT_PACK_AHEAD < kc) {   /* rows far apart (B in DRAM): fetch ahead */
            __builtin_prefetch(b + MMT_PACK_AHEAD * x->ldb, 0, 3);
            __builtin_prefetch(b + MMT_PACK_AHEAD * x->ldb + MMT_VL, 0, 3);
        }
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

/* C rows [i0, i0 + R) accumulate a_ik * (row k of B), k increasing: each row of B is
 * read once, contiguously, for all R rows of C (in the L1 cache meanwhile). */
MMT_INLINE void MMT_NAME(gemv)(const MMT_NAME(Args) *x, size_t i0, const int R) {
    size_t n = x->n, nv = n / MMT_VL * MMT_VL;
    MMT_M mt = MMT_LANES((int64_t)(n - nv));
    float *c[4];
    for (int r = 0; r < R; r++) {
        c[r] = x->c + (i0 + r) * x->ldc;
        if (x->zero)
            for (size_t j = 0; j < n; j++)
                c[r][j] = 0.0f;
    }
    const rt_f32 *a = x->a + i0 * x->lda;
    for (uint32_t k = 0; k < x->k; k++) {
        const float *b = x->b + k * x->ldb;
        MMT_V av[4];
        for (int r = 0; r < R; r++)
            av[r] = MMT_SET1(a[r * x->lda + k]);
        const float *pf = x->b + (k + MMT_GEMV_AHEAD < x->k ? k + MMT_GEMV_AHEAD : k) * x->ldb;
        for (size_t j = 0; j < nv; j += MMT_VL) {
            if (j % 16 == 0)
                __builtin_prefetch(pf + j, 0, 3);   /* a row ahead: rows are pages apart */
            MMT_V bv = MMT_LOADU(b + j);
            for (int r = 0; r < R; r++)
                MMT_STOREU(c[r] + j, MMT_FMA(av[r], bv, MMT_LOADU(c[r] + j)));
        }
        if (nv < n) {
            MMT_V bv = MMT_LOADM(mt, b + nv);
            for (int r = 0; r < R; r++)
                MMT_STOREM(c[r] + nv, mt, MMT_FMA(av[r], bv, MMT_LOADM(mt, c[r] + nv)));
        }
    }
}

/* Columns [j0, j0 + MMT_VL) of C rows [i0, i0 + R) over k rows [k0, k0 + kc) of a B
 * given transposed (x->b: element (k,j) at b[j * ldb + k]), through bp: the block is
 * transposed there first (lanes past n zero), then each k is one FMA per row of C. */
MMT_INLINE void MMT_NAME(gemv_t_block)(const MMT_NAME(Args) *x, float *bp, size_t i0,
                                        size_t j0, uint32_t k0, uint32_t kc, const int R) {
    size_t nj = x->n - j0 < MMT_VL ? x->n - j0 : MMT_VL;
    MMT_NAME(transpose_in)(x, bp, MMT_VL, k0, kc, j0, nj);
    MMT_M mj = MMT_LANES((int64_t)nj);
    MMT_V acc[4];
    const rt_f32 *a[4];
    for (int r = 0; r < R; r++) {
        float *c = x->c + (i0 + r) * x->ldc + j0;
        acc[r] = x->zero && k0 == 0 ? MMT_ZERO() : MMT_LOADM(mj, c);
        a[r] = x->a + (i0 + r) * x->lda + k0;
    }
    for (uint32_t k = 0; k < kc; k++) {
        MMT_V bv = MMT_LOAD(bp + k * MMT_VL);
        for (int r = 0; r < R; r++)
            acc[r] = MMT_FMA(MMT_SET1(a[r][k]), bv, acc[r]);
    }
    for (int r = 0; r < R; r++)
        MMT_STOREM(x->c + (i0 + r) * x->ldc + j0, mj, acc[r]);
}

/* C rows [i0, i0 + R) from a B given transposed (MMT_NAME(gemv_t_block)), bp the
 * packing buffer. */
MMT_INLINE void MMT_NAME(gemv_t)(const MMT_NAME(Args) *x, float *bp, size_t i0, const int R) {
    for (size_t j0 = 0; j0 < x->n; j0 += MMT_VL)
        for (uint32_t k0 = 0; k0 < x->k || k0 == 0; k0 += MMT_GEMV_K) {
            uint32_t kc = x->k - k0 < MMT_GEMV_K ? x->k - k0 : MMT_GEMV_K;
            MMT_NAME(gemv_t_block)(x, bp, i0, j0, k0, kc, R);
            if (!x->k)
                break;
        }
}

/* One function per row count of the streamed products (MMT_NAME(gemv), MMT_NAME(gemv_t):
 * bp NULL for B as it is, else the packing buffer for a B given transposed). */
#define MMT_GEMV(R)                                                                      \
    MMT_TARGET static void MMT_NAME(gemv_##R)(const MMT_NAME(Args) *x, float *bp,        \
                                              size_t i0) {                               \
        if (bp)                                                                          \
            MMT_NAME(gemv_t)(x, bp, i0, R);                                              \
        else                                                                             \
            MMT_NAME(gemv)(x, i0, R);                                                    \
    }
MMT_GEMV(1)
MMT_GEMV(2)
MMT_GEMV(3)
MMT_GEMV(4)

/* The rows of C in groups of up to MMT_GEMV_M through the streamed product (bp: see
 * MMT_GEMV). */
MMT_TARGET static void MMT_NAME(gemv_all)(const MMT_NAME(Args) *x, float *bp) {
    for (uint32_t i0 = 0; i0 < x->m; i0 += MMT_GEMV_M)
        switch (x->m - i0 < MMT_GEMV_M ? x->m - i0 : MMT_GEMV_M) {
        case 1: MMT_NAME(gemv_1)(x, bp, i0); break;
        case 2: MMT_NAME(gemv_2)(x, bp, i0); break;
        case 3: MMT_NAME(gemv_3)(x, bp, i0); break;
        default: MMT_NAME(gemv_4)(x, bp, i0); break;
        }
}

/* Runs a verified F32 MATMUL mm on core c (A and B where s says) with this
 * instance's instruction set. */
MMT_TARGET static void MMT_NAME(run)(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    MMT_NAME(Args) x = {(const rt_f32 *)s->a, (const float *)s->b, (float *)(c->lx + mm->c),
                        s->lda, s->ldb, mm->ldc, mm->m, mm->n, mm->k,
                        !(mm->flags & ISA_F_ACCUM), s->bt};
    if ((s->bt && mm->m <= MMT_GEMV_M) || mm->m <= MMT_GEMV_ROWS) {
        MMT_NAME(gemv_all)(&x, s->bt ? c->pack : NULL);
        return;
    }
    if (!x.bt && (mm->m < MMT_PACK_M || !c->pack)) { /* in place, all k at once */
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

/* Runs a verified F32 MATMUL (A and B where s says) with this instance's instruction
 * set; false (nothing done) on a host without it. */
bool MMT_EXPORT(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    if (!rt_host_has(MMT_FEATURE))
        return false;
    MMT_NAME(run)(c, mm, s);
    return true;
}
