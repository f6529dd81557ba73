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
 *   MMT_VI         an index vector; MMT_IDX(s) lane i = i * s; MMT_GATHERM(m, p, vi)
 *                  masked gather (zeroing) of p[vi[i]]; MMT_LOADS2(n, p) lanes i < n
 *                  of p[2*i]; MMT_MCOUNT(m) the number of lanes of mask m;
 *                  MMT_PERM(v, vi) lane i = lane vi[i] of v; MMT_TRANSPOSE(v) transposes
 *                  the MMT_VL x MMT_VL floats of the vectors v[0..MMT_VL) in place
 *   MMT_NAME(x)    the name of this instance's function x
 *   MMT_HALF       1 when a half-width vector MMT_HV runs its FMA (MMT_HFMA) at twice
 *                  the full vector's rate: MMT_HLO(v) its low half, MMT_HUP(h) a full
 *                  vector whose low half is h (the rest undefined); else 0
 *   MMT_FEATURE    the RT_HOST_* bits the host needs; MMT_EXPORT the exported entry,
 *                  MMT_PACKS the exported test of whether it packs A and B
 *
 * Blocked like a BLAS GEMM for the small products an LX tile holds: k is cut into
 * blocks of MMT_KCP rows; for each block the columns of B, MMT_NC at a time, go into
 * contiguous zero-padded panels of 2 vectors' width (MMT_KCP x NR floats, in L2), and
 * every block of MMT_MR rows of C has its rows of A copied MMT_AP floats apart (in L1)
 * and runs over all panels, one pointer for A and one for B in the micro-kernel's
 * loop. The first row block reads a plain B in place and stores each panel as it goes
 * (B's DRAM stream overlaps its multiply-adds; a packing pass of its own waited on
 * it); a window or transposed B is packed first. Read in place, rows of A a multiple
 * of 4 KiB apart shared a few L1 sets, and the loop kept a pointer per row (spilled):
 * the 1024^3 GEMM's tiles ran at 78% of one core's peak, 86% packed. The rows are cut
 * into equal blocks of at most MMT_MR (no thin remainder), the last columns are masked
 * at n (one vector when the second would be empty, a half-width one for at most half a
 * vector's lanes).
 * Products with fewer than MMT_PACK_M rows (8 row blocks) read B in place, a panel's
 * width at a time for all row blocks (all of k at once, or MMT_KC rows at a time when
 * the panel would not stay in the L1 cache), through the same micro-kernel with
 * masked loads, the first row block storing the panel packed for the others as it
 * reads it, and A's rows of the k block packed once for all panels (apack_room):
 * a packing pass of B of its own costs more than it saves when few row blocks
 * reuse a panel (measured on the tile shapes of ResNet-50 and BERT; vector-matrix products of a
 * decode step are the extreme case). A vector-matrix product (MMT_GEMV_ROWS row: a
 * decode step) streams B by rows instead, MMT_GEMV_G rows a pass, each row read once,
 * contiguously, from wherever it is (a deferred LOAD's DRAM), with the row of C in the
 * L1 cache (rt_kern_mmv.h). A B given transposed (a deferred transposing LOAD,
 * RtMmSrc.bt; needs the packing buffer) is transposed while it is packed, 4 x 4
 * blocks at a time; products of at most MMT_GEMV_M rows read MMT_VL of its stored rows
 * at a time, a vector of each, transpose them in registers and accumulate C's MMT_VL
 * columns over them in registers (rt_kern_mmv.h).
 *
 * A window B (ISA_F_BWIN: a convolution's implicit-GEMM operand read from its input
 * patch) is never copied out whole: with few rows of C it is read in place, a row of
 * output pixels at a time through the offsets of its k rows (win_inplace), or, when
 * those rows are short, along the padded-width grid into a grid-shaped C (win_grid);
 * other products with fewer than MMT_PACK_M rows gather it a k-chunk at a time into a
 * dense B read in place (win_dense); the rest pack its panels straight from the window
 * (pack_win). Column strides 1 and 2 use plain loads, others gathers. With one or two
 * rows of C, win_inplace and win_grid run several column blocks a call
 * (rt_kern_mmw.h), so that the FMA chains of one row do not wait for each other.
 * Before all of these, a product with one or two vectors' worth of rows of C (a
 * convolution split 16 or 32 output channels a core) and a window of column stride 1
 * or 2, or a plain B in LX, runs with channels in the lanes instead of pixels
 * (rt_kern_mmc.h): no lane is wasted on a pixel row of 7 or 14, and a k step does 16
 * or more FMAs where a block of 8 rows did 16 on half-empty vectors.
 *
 * isa.md semantics: every C element accumulates its products in increasing k from 0
 * (or from the old C with ACCUM), each step one fused multiply-add. Between k blocks
 * the running sum is stored in C and reloaded, which is exact, so the result is bit
 * for bit that of the scalar loop in rt_kern_matmul.c, on every host.
 */

#define MMT_NR (2 * MMT_VL)                /* columns of a packed panel */
#define MMT_KC 128                         /* k rows of B read in place at a time */
#define MMT_KCP 256                        /* k rows of a packed panel (A and B packed) */
#define MMT_AP (MMT_KCP + 16)              /* row pitch of a row block's packed A */
#define MMT_NC ((RT_PACK_BYTES / 4 - MMT_MR * MMT_AP) / MMT_KCP / MMT_NR * MMT_NR)
                                           /* columns of B packed at a time (room left
                                              for a row block's packed A) */
#define MMT_PACK_M (8 * MMT_MR)            /* fewer rows of C: B is read in place */
#define MMT_PF_ROWS 8                      /* rows of B prefetched ahead when in place */
#define MMT_GEMV_M 4                       /* at most this many rows: B^T taken */
#define MMT_GEMV_ROWS 1                    /* at most this many: B streamed by rows */
#define MMT_GEMV_AHEAD 2                   /* rows of B prefetched ahead when streamed */
#define MMT_GEMV_G 8                       /* rows of B a pass of a one-row product */
#define MMT_INLINE MMT_TARGET __attribute__((always_inline)) static inline

typedef struct {
    const rt_f32 *a;         /* element (0,0) of A (may be unaligned) */
    const float *b;          /* element (0,0) of B */
    float *c;
    size_t lda, ldb, ldc;    /* row strides in elements */
    uint32_t m, n, k;
    bool zero;               /* start from 0 instead of the old C */
    bool win;                /* B is a window (ISA_F_BWIN, isa.md) based at b */
    uint32_t ke1, ke2, ne1;  /* its inner extents: k over (.., ke1, ke2), n over (.., ne1) */
    int64_t ks0, ks1, ks2, ns0, ns1; /* its strides (elements) */
    const int32_t *koff;     /* in-place window rows: offset of each B row from b */
    MMT_VI gidx;             /* MMT_KOFFG: lane offsets, lane * ns1 */
    bool bt;                 /* B given transposed: element (k,j) at b[j * ldb + k] */
    const char *pf;          /* a micro-kernel call's k step k < pfn prefetches pf + k*pfst */
    uint32_t pfn;            /* (a line of each row of the next block of B: MMT_NAME(ahead)) */
    size_t pfst;
    float *pk;               /* B in place: the call also stores B's rows here, as a packed
                                panel (kc rows of MMT_NR floats), for the next row blocks */
    const float *ap;         /* MMT_PACKAB: the row block's A packed (MMT_NAME(pack_a)),
                                rows MMT_AP apart */
    const char *const *pfp;  /* chan_micro's k step k < pfpn prefetches pfp[k] (rt_kern_mmc.h), */
    const char *pfc;         /* or, when pfc is not NULL, the line at pfc + 64 k */
    uint32_t pfpn;
    const RtEpi *epi;        /* the MATMUL's epilogue (RtMmSrc.epi), or NULL */
    const RtPost *po;        /* a micro-kernel call's tile is final: stored through this
                                chain (epi->post, rt_kern_mmp.h) */
    uint32_t prow;           /* C's row 0 as a row of the chain's operands (a channel
                                group's first row) */
    int64_t klin;            /* chan_micro without koff (0: koff): B's row k at b + k * klin;
                                with kin, k in groups of its G rows, kin groups kst apart
                                from each multiple of klin, the first at phase kq0 */
    int64_t kst;
    uint32_t kin, kq0;
    const float *pnx;        /* chan_pre: the kept transpose this thread read after this
                                one the last time (rt_apre_take_on), pnxn floats; or NULL */
    size_t pnxn;
} MMT_NAME(Args);

/* Runs x's epilogue, if any, over rows [i0, i0 + rows) and columns [j0, j0 + cols) of
 * C, final now: while they are in the host's L1 or L2 cache, instead of in a pass of
 * its own over all of C (the bias, residual and activation of a convolution). */
MMT_INLINE void MMT_NAME(epi)(const MMT_NAME(Args) *x, size_t i0, size_t rows, size_t j0,
                               size_t cols) {
    if (x->epi && x->epi->tile)
        x->epi->tile(x->epi->ctx, (uint32_t)i0, (uint32_t)rows, (uint32_t)j0, (uint32_t)cols);
}

#include "rt_kern_mmp.h"

/* Modes of the micro-kernel's B: in place (rows ldb apart), a packed panel, a packed
 * panel or in place with A packed (x->ap; the other modes read A from its rows in
 * place), in place through the row offsets x->koff (a window), those rows with column
 * stride 2, or gathered with column stride ns1 (x->gidx). */
enum { MMT_INPLACE, MMT_PACKED, MMT_PACKAB, MMT_INPLACEA, MMT_KOFF, MMT_KOFF2, MMT_KOFFG };

/* Copies rows k0..k0+kc of columns j0..j0+w of a B given transposed into bp (kc rows
 * of w floats, w a multiple of 4; columns past nj 0), MMT_VL x MMT_VL blocks through
 * vector registers where w is a multiple of MMT_VL, then 4 x 4 ones (the bits
 * unchanged). In 4 x 4 blocks alone, a tied LM head's products (Qwen2-0.5B: 64 x 896
 * x 151936, B the embedding) spent a third of their time here. */
MMT_INLINE void MMT_NAME(transpose_in)(const MMT_NAME(Args) *x, float *bp, size_t w,
                                        uint32_t k0, uint32_t kc, size_t j0, size_t nj) {
    size_t nj4 = nj & ~(size_t)3, jv = 0;
    uint32_t kc4 = kc & ~3u;
    if (w % MMT_VL == 0) {
        size_t njv = nj / MMT_VL * MMT_VL;
        uint32_t kcv = kc / MMT_VL * MMT_VL;
        for (; jv < njv; jv += MMT_VL) {
            const float *row = x->b + (j0 + jv) * x->ldb + k0;
            for (uint32_t k = 0; k < kcv; k += MMT_VL) {
                MMT_V t[MMT_VL];
#pragma GCC unroll 16
                for (int i = 0; i < MMT_VL; i++)
                    t[i] = MMT_LOADU(row + (size_t)i * x->ldb + k);
                MMT_TRANSPOSE(t);
#pragma GCC unroll 16
                for (int i = 0; i < MMT_VL; i++)
                    MMT_STOREU(bp + (k + i) * w + jv, t[i]);
            }
            for (uint32_t k = kcv; k < kc; k++)
                for (size_t q = jv; q < jv + MMT_VL; q++)
                    bp[k * w + q] = row[(q - jv) * x->ldb + k];
        }
    }
    for (size_t j = jv; j < nj4; j += 4) {
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

/* Packs rows [i0, i0 + R) of A, k columns [k0, k0 + kc), into ap, rows MMT_AP floats
 * apart: each row is read once, contiguously, wherever it is, and the micro-kernel
 * addresses all rows from one pointer (constant offsets). Rows a multiple of 4 KiB
 * apart (a deferred LOAD's DRAM), broadcast from in place, shared a few L1 sets; here
 * MMT_AP floats are 16 lines plus one, so the rows spread over the sets. The next row
 * block's Rn rows are fetched into L2 as it goes, to arrive while this block computes. */
MMT_INLINE void MMT_NAME(pack_a)(const MMT_NAME(Args) *x, float *ap, size_t i0, uint32_t k0,
                                  uint32_t kc, int R, int Rn) {
    const rt_f32 *a = x->a + i0 * x->lda + k0;
    for (int r = 0; r < R; r++, a += x->lda, ap += MMT_AP) {
        for (uint32_t k = 0; k < kc; k += 16)
            if (r < Rn)
                __builtin_prefetch(a + R * x->lda + k, 0, 2);
        uint32_t k = 0;
        for (; k + MMT_VL <= kc; k += MMT_VL)      /* whole vectors: plain loads */
            MMT_STORE(ap + k, MMT_LOADU(a + k));
        if (k < kc)
            MMT_STORE(ap + k, MMT_LOADM(MMT_LANES((int64_t)kc - k), a + k));
    }
    for (int r = R; r < Rn; r++)
        for (uint32_t k = 0; k < kc; k += 16)
            __builtin_prefetch(a + r * x->lda + k, 0, 2);
}

/* Copies len elements of a window row, stride st apart from src, to dst (masked
 * vector loads for st 1 and 2, else masked gathers of the stride idx). With over, the
 * last vector is stored whole, zeros past len: the caller has room for them and
 * writes whatever they cover later (pack_win's panel rows, left to right, row after
 * row); a masked store of a short row (resnet50's 7 pixels) cost more on AMD Zen 3
 * than the loads and shuffles of the row together. */
MMT_INLINE void MMT_NAME(win_seg)(float *dst, const float *src, size_t len, int64_t st,
                                   MMT_VI idx, const bool over) {
    for (size_t o = 0; o < len; o += MMT_VL) {
        MMT_M mk = MMT_LANES((int64_t)(len - o));
        MMT_V v = st == 1   ? MMT_LOADM(mk, src + o)
                  : st == 2 ? MMT_LOADS2((int64_t)(len - o), src + 2 * o)
                            : MMT_GATHERM(mk, src + o * st, idx);
        if (over)
            MMT_STOREU(dst + o, v);
        else
            MMT_STOREM(dst + o, mk, v);
    }
}

/* Packs B[k0..k0+kc, j0..j0+nc) of a window (x->win) into bp (one panel): the panel's
 * columns are cut into runs within one j_0 (a row of output pixels), each copied per
 * k row from the row's offset; the k row's (i_0, i_1, i_2) advance like an odometer. */
MMT_INLINE void MMT_NAME(pack_win)(const MMT_NAME(Args) *x, float *bp, uint32_t k0,
                                    uint32_t kc, size_t j0, size_t nc) {
    size_t sq[MMT_NR], sl[MMT_NR];
    int64_t so[MMT_NR];
    int nseg = 0;
    for (size_t q = 0; q < nc; nseg++) {
        size_t p = j0 + q, col = p % x->ne1, len = x->ne1 - col;
        sq[nseg] = q;
        sl[nseg] = len < nc - q ? len : nc - q;
        so[nseg] = (int64_t)(p / x->ne1) * x->ns0 + (int64_t)col * x->ns1;
        q += sl[nseg];
    }
    MMT_VI idx = MMT_IDX((int32_t)x->ns1);
    uint32_t i2 = k0 % x->ke2, i1 = k0 / x->ke2 % x->ke1, i0 = k0 / x->ke2 / x->ke1;
    for (uint32_t k = 0; k < kc; k++, bp += MMT_NR) {
        if (nc < MMT_NR) {
            MMT_STORE(bp, MMT_ZERO());
            MMT_STORE(bp + MMT_VL, MMT_ZERO());
        }
        const float *row = x->b + i0 * x->ks0 + i1 * x->ks1 + i2 * x->ks2;
        for (int s = 0; s < nseg; s++)
            MMT_NAME(win_seg)(bp + sq[s], row + so[s], sl[s], x->ns1, idx, true);
        if (++i2 == x->ke2) {
            i2 = 0;
            if (++i1 == x->ke1)
                i1 = 0, i0++;
        }
    }
}

/* C[i0..i0+R, j0..j0+NV*VL) over k rows [k0, k0+kc) of A and kc rows of B at b, ldb
 * apart (a packed panel: ldb = NR, m0 / m1 only for C; in place: ldb of B, and the
 * masks also keep B's loads inside its columns). zero starts from 0 instead of C. NV
 * is 2, or 1 when m1 is empty (the last columns: the second vector would only be
 * multiplied by zeros). H: the last vector has at most MMT_VL / 2 lanes of C and runs
 * as a half-width vector (MMT_HV; MMT_HALF hosts only): a row of 56 output pixels
 * costs 3.5 vectors' FMAs instead of 4 on a host that runs a full vector's FMA as two
 * halves; the same FMA per lane, so the same bits. */
MMT_INLINE void MMT_NAME(micro)(const MMT_NAME(Args) *x, const float *b, size_t ldb,
                                 size_t i0, size_t j0, uint32_t k0, uint32_t kc, bool zero,
                                 MMT_M m0, MMT_M m1, const int mode, const int R,
                                 const int NV, const int H) {
    const bool packed = mode == MMT_PACKED || mode == MMT_PACKAB;
    const bool apk = mode == MMT_PACKAB || mode == MMT_INPLACEA; /* A at x->ap, MMT_AP apart */
    const bool inpl = mode == MMT_INPLACE || mode == MMT_INPLACEA;
    const int32_t *koff = mode >= MMT_KOFF ? x->koff + k0 : NULL;
    const int64_t n0 = mode == MMT_KOFF2 ? MMT_MCOUNT(m0) : 0;
    const int64_t n1 = mode == MMT_KOFF2 ? MMT_MCOUNT(m1) : 0;
    const bool h0 = H && NV == 1, h1 = H && NV == 2;   /* which vector is half */
    MMT_V acc[MMT_MR][2];
    MMT_HV hacc[MMT_MR];
    float *c = x->c + i0 * x->ldc + j0;
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        MMT_V c0 = zero ? MMT_ZERO() : MMT_LOADM(m0, c + r * x->ldc);
        if (h0)
            hacc[r] = MMT_HLO(c0);
        else
            acc[r][0] = c0;
        if (NV == 2) {
            MMT_V c1 = zero ? MMT_ZERO() : MMT_LOADM(m1, c + r * x->ldc + MMT_VL);
            if (h1)
                hacc[r] = MMT_HLO(c1);
            else
                acc[r][1] = c1;
        }
    }
    const rt_f32 *a = apk ? x->ap : x->a + i0 * x->lda + k0;
    size_t lda = apk ? MMT_AP : x->lda;   /* packed: a constant, one pointer for all rows */
    /* a window's next row offset read a k step ahead (chan_micro says why) */
    int32_t onext = mode >= MMT_KOFF && kc ? koff[0] : 0;
    for (uint32_t k = 0; k < kc; k++, b += ldb) {
        const float *bk = b;
        if (mode >= MMT_KOFF) {
            bk = b + onext;
            onext = koff[k + 1 < kc ? k + 1 : k];
        }
        MMT_V b0, b1 = MMT_ZERO();
        if (mode == MMT_KOFF2) {
            b0 = MMT_LOADS2(n0, bk);
            if (NV == 2)
                b1 = MMT_LOADS2(n1, bk + 2 * MMT_VL);
        } else if (mode == MMT_KOFFG) {
            b0 = MMT_GATHERM(m0, bk, x->gidx);
            if (NV == 2)
                b1 = MMT_GATHERM(m1, bk + MMT_VL * x->ns1, x->gidx);
        } else {
            bool pfk = x->pf && k < x->pfn;
            if (pfk)                     /* the next block of B, into L2 */
                __builtin_prefetch(x->pf + k * x->pfst, 0, 2);
            if (mode == MMT_INPLACEA || (mode == MMT_INPLACE && !pfk)) {
                /* rows far apart (B in DRAM): fetch ahead */
                __builtin_prefetch(bk + MMT_PF_ROWS * ldb, 0, 3);
                if (NV == 2)
                    __builtin_prefetch(bk + MMT_PF_ROWS * ldb + MMT_VL, 0, 3);
            }
            b0 = packed ? MMT_LOAD(bk) : MMT_LOADM(m0, bk);
            if (NV == 2)
                b1 = packed ? MMT_LOAD(bk + MMT_VL) : MMT_LOADM(m1, bk + MMT_VL);
            if (inpl && x->pk) {
                MMT_STORE(x->pk + (size_t)k * MMT_NR, b0);
                MMT_STORE(x->pk + (size_t)k * MMT_NR + MMT_VL, b1);
            }
        }
        MMT_HV hb = MMT_HLO(h0 ? b0 : b1);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            MMT_V av = MMT_SET1(a[r * lda + k]);
            if (h0)
                hacc[r] = MMT_HFMA(MMT_HLO(av), hb, hacc[r]);
            else
                acc[r][0] = MMT_FMA(av, b0, acc[r][0]);
            if (h1)
                hacc[r] = MMT_HFMA(MMT_HLO(av), hb, hacc[r]);
            else if (NV == 2)
                acc[r][1] = MMT_FMA(av, b1, acc[r][1]);
        }
    }
    if (x->po && apk && NV == 2 && !H && R >= MMT_MR - 2 && x->po->nreg == x->po->n) {
        /* the packed kernel's common full blocks (the last two row counts of two
         * vectors: 10 to 12 rows on AVX-512, 128 or 64 rows of C; 4 to 6 on AVX2), a
         * chain with register forms only: on the accumulators, without staging them
         * (only these variants, so that the code of the others does not grow:
         * resnet50's 1 x 1 convolutions with a residual, about 0.95 of their time
         * against post_block; on AMD Zen 3 post_block was 8% of mobilenet_v2's samples
         * and 10% of a strided 1 x 1 convolution's while AVX2 never took this path) */
        MMT_V v[MMT_MR][2];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++)
            v[r][0] = acc[r][0], v[r][1] = acc[r][1];
        MMT_NAME(post_regs_store)(x->po, v, R, 2, x->prow + i0, j0, m0, m1, c, x->ldc);
        return;
    }
    if (x->po) {        /* final: stored through the epilogue's chain (rt_kern_mmp.h) */
        _Alignas(64) float tb[MMT_MR * MMT_NR];
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            MMT_STORE(tb + r * MMT_NR, h0 ? MMT_HUP(hacc[r]) : acc[r][0]);
            if (NV == 2)
                MMT_STORE(tb + r * MMT_NR + MMT_VL, h1 ? MMT_HUP(hacc[r]) : acc[r][1]);
        }
        MMT_NAME(post_block)(x->po, tb, MMT_NR, c, x->ldc, x->prow + i0, (size_t)R, j0,
                             (size_t)(MMT_MCOUNT(m0) + MMT_MCOUNT(m1)));
        return;
    }
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        MMT_STOREM(c + r * x->ldc, m0, h0 ? MMT_HUP(hacc[r]) : acc[r][0]);
        if (NV == 2)
            MMT_STOREM(c + r * x->ldc + MMT_VL, m1, h1 ? MMT_HUP(hacc[r]) : acc[r][1]);
    }
}

/* The micro-kernel of R rows, NV vectors and half last vector H for B's mode (a
 * switch over the modes; gathers never take the half vector). */
#define MMT_MICRO_MODES(R, NV, H)                                                        \
    do {                                                                                 \
        if (mode == MMT_PACKED)                                                          \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_PACKED, R, NV, H); \
        else if (mode == MMT_KOFF)                                                       \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_KOFF, R, NV, H); \
        else if (mode == MMT_KOFF2)                                                      \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_KOFF2, R, NV, H); \
        else if (mode == MMT_KOFFG)                                                      \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_KOFFG, R, NV, 0); \
        else if (mode == MMT_PACKAB)                                                     \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_PACKAB, R, NV, H); \
        else if (mode == MMT_INPLACEA)                                                   \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_INPLACEA, R, NV, H); \
        else                                                                             \
            MMT_NAME(micro)(x, b, ldb, i0, j0, k0, kc, zero, m0, m1, MMT_INPLACE, R, NV, H); \
    } while (0)

/* One function per row count, so each keeps its accumulators in registers; one
 * vector of columns when the second has no lane of C; the last one half-width when
 * it has at most half a vector's lanes (MMT_HALF hosts, not for gathers). */
#define MMT_MICRO(R)                                                                     \
    MMT_TARGET static void MMT_NAME(micro_##R)(const MMT_NAME(Args) *x, const float *b,   \
                                               size_t ldb, size_t i0, size_t j0,         \
                                               uint32_t k0, uint32_t kc, bool zero,      \
                                               MMT_M m0, MMT_M m1, int mode) {           \
        int last = MMT_MCOUNT(m1) ? MMT_MCOUNT(m1) : MMT_MCOUNT(m0);                     \
        bool half = MMT_HALF && mode != MMT_KOFFG && 2 * last <= MMT_VL;                 \
        if (MMT_MCOUNT(m1) && half)                                                      \
            MMT_MICRO_MODES(R, 2, 1);                                                    \
        else if (MMT_MCOUNT(m1))                                                         \
            MMT_MICRO_MODES(R, 2, 0);                                                    \
        else if (half)                                                                   \
            MMT_MICRO_MODES(R, 1, 1);                                                    \
        else                                                                             \
            MMT_MICRO_MODES(R, 1, 0);                                                    \
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
                                  size_t, uint32_t, uint32_t, bool, MMT_M, MMT_M, int);
static const MMT_NAME(MicroFn) MMT_NAME(micros)[MMT_MR + 1] = {
    NULL, MMT_NAME(micro_1), MMT_NAME(micro_2), MMT_NAME(micro_3), MMT_NAME(micro_4),
    MMT_NAME(micro_5), MMT_NAME(micro_6),
#if MMT_MR == 12
    MMT_NAME(micro_7), MMT_NAME(micro_8), MMT_NAME(micro_9), MMT_NAME(micro_10),
    MMT_NAME(micro_11), MMT_NAME(micro_12),
#endif
};

/* The number of row blocks (micro-kernel calls per panel) of m rows (at least 1). */
MMT_INLINE uint32_t MMT_NAME(row_blocks)(uint32_t m) {
    return m ? (m + MMT_MR - 1) / MMT_MR : 1;
}

/* Rows of C of the next micro-kernel call when left rows remain: the fewest blocks
 * of at most MMT_MR rows, of equal size (16 rows: 8 + 8, not 12 + 4; 64: 11 x 4 +
 * 10 x 2), so no call is a thin remainder whose FMAs have little else to hide the
 * loads and loop behind. */
MMT_INLINE uint32_t MMT_NAME(block_rows)(uint32_t left) {
    uint32_t nb = MMT_NAME(row_blocks)(left);
    return (left + nb - 1) / nb;
}

/* Points y's prefetch at its share of the next block of B (x's B in place, not
 * transposed: rows [k0, k0 + kc), columns [j0, j0 + nc)) for the t-th of the T
 * micro-kernel calls of the current block: the block's lines are dealt out over all T
 * calls, a column of lines (line t % lines of each row) to T / lines calls, each taking
 * its run of rows, one line a k step; none when t is past them. So the next block is
 * in L2 when it starts: a weight's rows are kilobytes apart in DRAM, too far apart for
 * the hardware prefetcher, and fetching them only a few rows ahead left the first pass
 * over each block waiting on DRAM (bert_base's 32- and 64-row products: 70-83 -> 85-89
 * GFLOP/s on one thread). Spread over all calls, not a line of every row in each of
 * the first calls: a burst of one prefetch every few cycles filled the miss buffers and
 * stalled the multiply-adds behind it (AMD Zen 3: bert_base's tiles with B from DRAM at
 * 63 GFLOP/s, 84 with B in the caches). */
MMT_INLINE void MMT_NAME(ahead)(MMT_NAME(Args) *y, const MMT_NAME(Args) *x, size_t t,
                                 size_t T, uint32_t k0, uint32_t kc, size_t j0, size_t nc) {
    y->pf = NULL;
    if (!kc || !nc)     /* no next block */
        return;
    const char *row = (const char *)(x->b + (size_t)k0 * x->ldb + j0);
    const char *line = (const char *)((uintptr_t)row & ~(uintptr_t)63);
    size_t lines = ((size_t)(row - line) + nc * 4 + 63) / 64;
    size_t per = T > lines ? T / lines : 1;             /* calls per column of lines */
    size_t run = (kc + per - 1) / per, r0 = t / lines * run;
    if (t >= per * lines || r0 >= kc)
        return;
    y->pf = line + t % lines * 64 + r0 * x->ldb * 4;
    y->pfn = (uint32_t)(kc - r0 < run ? kc - r0 : run);
    y->pfst = x->ldb * 4;
}

/* Points y's prefetch, in the rb-th row block of a panel of B read in place (k rows
 * [k0, k0 + kc)), at its share of the next panel, columns [nj, nj + MMT_NR) (none past
 * n), a line a k step into L2. The first row block reads each panel in place, its rows
 * kilobytes apart (a convolution's input in DRAM: 224 pixels of a 56 x 56 map), and
 * MMT_PF_ROWS rows ahead was too late: perf put 30% of the micro-kernel's samples of
 * resnet50's 1 x 1 convolutions of 32 output channels a core on the first row block's
 * loads of B. With one k block, ahead has no next block to fetch. */
MMT_INLINE void MMT_NAME(next_panel)(MMT_NAME(Args) *y, const MMT_NAME(Args) *x, size_t rb,
                                      uint32_t k0, uint32_t kc, size_t nj) {
    size_t nc = nj < x->n ? (x->n - nj < MMT_NR ? x->n - nj : MMT_NR) : 0;
    MMT_NAME(ahead)(y, x, rb, MMT_NAME(row_blocks)(x->m), k0, nc ? kc : 0, nj, nc);
}

/* Points y's prefetch at half of the next kept panel nxt (h rows of MMT_NR floats, a
 * line a k step): its first half in a k block's first row block (i0 0), the second
 * in the next (i0 r1); none in the others, or without nxt. */
MMT_INLINE void MMT_NAME(kept_ahead)(MMT_NAME(Args) *y, const float *nxt, uint32_t h,
                                      uint32_t i0, uint32_t r1) {
    bool pf = nxt && h && (i0 == 0 || i0 == r1);
    y->pf = pf ? (const char *)nxt + (i0 ? (size_t)h * 64 : 0) : NULL;
    y->pfst = 64;
    y->pfn = h;
}

/* Columns [j0, j0 + nc) of C over k rows [k0, k0 + kc): packs those columns of B
 * into panels, then runs every row block of C over all of them (prefetching the
 * next block, rows [nk0, nk0 + nkc) and columns [nj0, nj0 + nnc), of a plain B or one
 * given transposed: its rows nj0.. over k nk0.., ahead's rows and columns swapped). A's
 * rows of the block are packed a row block at a time, or all already packed at apre
 * (MMT_AP floats apart: the thread's cache, MMT_NAME(acached)). With kept (a plain B's
 * panels of the block kept packed for the session, bpre), B's panels are read there,
 * nothing of B is packed, and the first two row blocks prefetch the next panel. */
MMT_TARGET static void MMT_NAME(packed_block)(const MMT_NAME(Args) *x, float *pack,
                                              uint32_t k0, uint32_t kc, size_t j0,
                                              size_t nc, uint32_t nk0, uint32_t nkc,
                                              size_t nj0, size_t nnc, const float *apre,
                                              const float *kept) {
    size_t np = (nc + MMT_NR - 1) / MMT_NR, t = 0;
    size_t calls = np * (size_t)MMT_NAME(row_blocks)(x->m);
    MMT_NAME(Args) y = *x;
    bool zero = x->zero && k0 == 0, plain = !x->win && !x->bt && !kept;
    for (size_t p = 0; !plain && !kept && p < np; p++) {
        int64_t left = (int64_t)nc - (int64_t)(p * MMT_NR);
        if (x->win)
            MMT_NAME(pack_win)(x, pack + p * kc * MMT_NR, k0, kc, j0 + p * MMT_NR,
                               left < MMT_NR ? (size_t)left : MMT_NR);
        else    /* B given transposed */
            MMT_NAME(transpose_in)(x, pack + p * kc * MMT_NR, MMT_NR, k0, kc, j0 + p * MMT_NR,
                                   left < MMT_NR ? (size_t)left : MMT_NR);
    }
    /* a row block's A after B's panels, or at pack when they are kept (bpre) */
    float *ap = kept ? pack : pack + np * kc * MMT_NR;
    y.ap = ap;
    bool post = k0 + kc == x->k && MMT_NAME(has_post)(x);  /* tiles final: their chain */
    y.po = post ? x->epi->post : NULL;
    uint32_t first_rows = MMT_NAME(block_rows)(x->m);
    for (uint32_t i0 = 0, rows; i0 < x->m; i0 += rows) {
        rows = MMT_NAME(block_rows)(x->m - i0);
        MMT_NAME(MicroFn) f = MMT_NAME(micros)[rows];
        uint32_t next = i0 + rows < x->m ? MMT_NAME(block_rows)(x->m - i0 - rows) : 0;
        if (apre)
            y.ap = apre + (size_t)i0 * MMT_AP;
        else
            MMT_NAME(pack_a)(x, ap, i0, k0, kc, (int)rows, (int)next);
        for (size_t p = 0; p < np; p++) {
            int64_t left = (int64_t)nc - (int64_t)(p * MMT_NR);
            const float *panel = (kept ? kept : pack) + p * kc * MMT_NR;
            bool first = plain && i0 == 0;   /* B in place, packed as it is read */
            if (plain)
                MMT_NAME(ahead)(&y, x, t++, calls, nk0, nkc, nj0, nnc);
            else if (x->bt && !kept)   /* the next block's rows of B^T: nj0.., k nk0.. */
                MMT_NAME(ahead)(&y, x, t++, calls, (uint32_t)nj0, (uint32_t)nnc, nk0, nkc);
            else if (kept)                /* the next panel of the block */
                MMT_NAME(kept_ahead)(&y, p + 1 < np ? panel + kc * MMT_NR : NULL, kc, i0,
                                     first_rows);
            y.pk = first ? pack + p * kc * MMT_NR : NULL;
            f(&y, first ? x->b + (size_t)k0 * x->ldb + j0 + p * MMT_NR : panel,
              first ? x->ldb : MMT_NR, i0, j0 + p * MMT_NR, k0, kc, zero, MMT_LANES(left),
              MMT_LANES(left - MMT_VL), first ? MMT_INPLACEA : MMT_PACKAB);
        }
        if (k0 + kc == x->k && !post)        /* the row block's columns are final */
            MMT_NAME(epi)(x, i0, rows, j0, nc);
    }
}

#include "rt_kern_mmw.h"

/* The offset of every B row of window x from its base, in the thread's kept offsets
 * (RtCore.koff; the packing buffer without them or past RT_KOFF_MAX rows): three
 * nested loops over k's (i_0, i_1, i_2), the innermost a run of ke2 offsets ks2 apart
 * (no division and no branch per k: a depthwise convolution's MATMUL is a few hundred
 * multiply-adds, and either cost more). The verifier checked that the extents
 * multiply to k, so none is 0 when k is not. The offsets depend on the extents and
 * strides alone: the next core program of the same convolution on the thread finds
 * them there (a third of win_chan's own time in resnet50, k up to 4608 a call). */
MMT_INLINE int32_t *MMT_NAME(win_koff)(RtCore *c, const MMT_NAME(Args) *x) {
    /* the extents and strides in locals: the stores to koff (int32_t) may alias x's
     * uint32_t fields, which the loops then read again after every store (a 3 x 3
     * window of 256 channels: about 1% of its MATMUL) */
    const uint32_t kk = x->k, ke1 = x->ke1, ke2 = x->ke2;
    const int64_t ks0 = x->ks0, ks1 = x->ks1, ks2 = x->ks2;
    RtKoffKey key = {kk, ke1, ke2, ks0, ks1, ks2};
    bool keep = c->koff && kk <= RT_KOFF_MAX;   /* the thread's, for its next programs */
    int32_t *koff = keep ? c->koff : (int32_t *)c->pack;
    if (keep && kk && c->koff_key.k == kk && c->koff_key.ke1 == ke1 &&
        c->koff_key.ke2 == ke2 && c->koff_key.ks0 == ks0 && c->koff_key.ks1 == ks1 &&
        c->koff_key.ks2 == ks2)
        return koff;                  /* the same window as the last: its offsets */
    if (keep)
        c->koff_key = key;
    uint32_t k = 0;
    for (int64_t o0 = 0; k < kk; o0 += ks0)
        for (uint32_t i1 = 0; i1 < ke1; i1++) {
            int64_t o = o0 + (int64_t)i1 * ks1;
            for (uint32_t i2 = 0; i2 < ke2; i2++, o += ks2)
                koff[k + i2] = (int32_t)o;
            k += ke2;
        }
    return koff;
}

/* A window's MATMUL with fewer than MMT_PACK_M rows of C whose pixel rows are short:
 * pixel (j_0, j_1) is at column g = j_0*W + j_1 of a grid of W = ns0 / ns1 columns a
 * row (the patch's padded width), at b + g*ns1. The micro-kernel runs in place along
 * the whole grid (loads; gathers for ns1 > 2) into a grid-shaped C in the packing
 * buffer, the old C copied in first for ACCUM, and the real columns are copied out:
 * the same fma chain per element. Taken for few rows of C (a depthwise convolution:
 * one per group) or when at least 3/4 of the grid's columns are real. False: not this
 * way. */
MMT_TARGET static bool MMT_NAME(win_grid)(RtCore *c, MMT_NAME(Args) *x) {
    if (x->m >= MMT_PACK_M || x->ns1 <= 0 || x->ns0 % x->ns1)
        return false;
    size_t w = (size_t)(x->ns0 / x->ns1), ne1 = x->ne1, ne0 = x->n / ne1;
    size_t g = (ne0 - 1) * w + ne1, kb = ((size_t)x->k * 4 + 63) & ~(size_t)63;
    if (w < ne1 || kb + (uint64_t)x->m * g * 4 > RT_PACK_BYTES ||
        (x->m > MMT_MR && 4 * ne1 < 3 * w))    /* more rows: win_dense wastes less */
        return false;
    MMT_NAME(Args) y = *x;
    y.koff = MMT_NAME(win_koff)(c, x);
    y.c = (float *)((uint8_t *)c->pack + kb);
    y.ldc = g;
    y.gidx = MMT_IDX((int32_t)x->ns1);
    if (!x->zero)
        for (uint32_t i = 0; i < x->m; i++)
            for (size_t r = 0; r < ne0; r++)
                rt_copy_bytes((uint8_t *)(y.c + i * g + r * w),
                              (const uint8_t *)(x->c + i * x->ldc + r * ne1), ne1 * 4);
    int mode = x->ns1 == 1 ? MMT_KOFF : x->ns1 == 2 ? MMT_KOFF2 : MMT_KOFFG;
    for (uint32_t i0 = 0, rows; i0 < x->m; i0 += rows) {
        rows = MMT_NAME(block_rows)(x->m - i0);
        if (rows <= 2 && mode != MMT_KOFFG) {   /* several blocks a call (rt_kern_mmw.h) */
            MMT_NAME(WQueue) q = {.x = &y, .i0 = i0, .rows = rows, .zero = x->zero,
                                  .mode = mode,
                                  .cap = MMT_NAME(wcap)((g + MMT_NR - 1) / MMT_NR)};
            for (size_t j = 0; j < g; j += MMT_NR)
                MMT_NAME(wpush)(&q, x->b + (int64_t)j * x->ns1, j, (int64_t)(g - j));
            MMT_NAME(wflush)(&q);
            continue;
        }
        for (size_t j = 0; j < g; j += MMT_NR) {
            int64_t left = (int64_t)(g - j);
            MMT_NAME(micros)[rows](&y, x->b + (int64_t)j * x->ns1, 0, i0, j, 0, x->k,
                                   x->zero, MMT_LANES(left), MMT_LANES(left - MMT_VL), mode);
        }
    }
    for (uint32_t i = 0; i < x->m; i++)
        for (size_t r = 0; r < ne0; r++)
            rt_copy_bytes((uint8_t *)(x->c + i * x->ldc + r * ne1),
                          (const uint8_t *)(y.c + i * g + r * w), ne1 * 4);
    return true;
}

/* A window's MATMUL in place, rows of output pixels (j_0) at a time: when its pixel
 * rows have column stride 1 (or 2, for at most MMT_MR rows of C: more would repeat
 * the strided loads that win_dense makes once) and fill the micro-kernel's columns
 * well enough (or are contiguous with each other; or, for at most MMT_MR rows of C,
 * better than win_grid would), few rows of C do not pay for packing. B's rows are
 * read through their offsets (x->koff, in the packing buffer). False: not this way. */
MMT_TARGET static bool MMT_NAME(win_inplace)(RtCore *c, MMT_NAME(Args) *x) {
    size_t ne1 = x->ne1, ne0 = ne1 ? x->n / ne1 : 0;
    if (ne1 && x->ns0 == (int64_t)ne1 * x->ns1)      /* rows end to end: one long row */
        ne1 = x->n, ne0 = 1;
    size_t used = (ne1 + MMT_NR - 1) / MMT_NR * MMT_NR;   /* columns computed a row */
    bool grid = x->ns1 > 0 && x->ns0 % x->ns1 == 0 &&
                (size_t)(x->ns0 / x->ns1) < used &&         /* win_grid computes fewer */
                (x->m <= MMT_MR || (size_t)(4 * ne1) >= (size_t)(3 * x->ns0 / x->ns1));
    bool few = x->m <= MMT_MR;                    /* win_dense's copy would not pay */
    if ((x->ns1 != 1 && (x->ns1 != 2 || !few)) || x->m >= MMT_PACK_M ||
        (uint64_t)x->k * 4 > RT_PACK_BYTES || (4 * ne1 < 3 * used && (!few || grid)))
        return false;
    x->koff = MMT_NAME(win_koff)(c, x);
    int mode = x->ns1 == 1 ? MMT_KOFF : MMT_KOFF2;
    for (uint32_t i0 = 0, rows; i0 < x->m; i0 += rows) {
        rows = MMT_NAME(block_rows)(x->m - i0);
        if (rows <= 2) {    /* several pixel rows a call (rt_kern_mmw.h) */
            size_t nb = ne0 * ((ne1 + MMT_NR - 1) / MMT_NR);
            MMT_NAME(WQueue) q = {.x = x, .i0 = i0, .rows = rows, .zero = x->zero,
                                  .mode = mode, .cap = MMT_NAME(wcap)(nb)};
            for (size_t r = 0; r < ne0; r++)
                for (size_t j = 0; j < ne1; j += MMT_NR)
                    MMT_NAME(wpush)(&q, x->b + (int64_t)r * x->ns0 + (int64_t)j * x->ns1,
                                    r * ne1 + j, (int64_t)(ne1 - j));
            MMT_NAME(wflush)(&q);
            continue;
        }
        for (size_t r = 0; r < ne0; r++)
            for (size_t j = 0; j < ne1; j += MMT_NR) {
                int64_t left = (int64_t)(ne1 - j);
                MMT_NAME(micros)[rows](x, x->b + (int64_t)r * x->ns0 + (int64_t)j * x->ns1, 0, i0,
                                       r * ne1 + j, 0, x->k, x->zero, MMT_LANES(left),
                                       MMT_LANES(left - MMT_VL),
                                       x->ns1 == 1 ? MMT_KOFF : MMT_KOFF2);
            }
    }
    return true;
}

/* Copies a window's k-row at row into the dense row d (win_dense) when its pixel
 * rows have column stride 2, with the masks made once (mout: the last vector's lanes
 * of a row): a row of at most half a vector is one masked load of its 2 * ne1 - 1
 * floats with its even lanes permuted to the front (even: lane i = 2i), a longer one
 * MMT_LOADS2 a vector at a time. The general copy (win_seg) took about half the time
 * of resnet50's 7 x 7 and 14 x 14 stride-2 products (now -26 to -46%). */
MMT_INLINE void MMT_NAME(dense_s2)(const MMT_NAME(Args) *x, float *d, const float *row,
                                    MMT_M min, MMT_M mout, MMT_VI even) {
    size_t ne1 = x->ne1, ne0 = x->n / ne1, full = (ne1 - 1) / MMT_VL * MMT_VL;
    if (2 * ne1 <= MMT_VL)
        for (size_t r = 0; r < ne0; r++)
            MMT_STOREM(d + r * ne1, mout,
                       MMT_PERM(MMT_LOADM(min, row + (int64_t)r * x->ns0), even));
    else
        for (size_t r = 0; r < ne0; r++, d += ne1) {
            const float *s = row + (int64_t)r * x->ns0;
            for (size_t o = 0; o < full; o += MMT_VL)
                MMT_STOREU(d + o, MMT_LOADS2(MMT_VL, s + 2 * o));
            MMT_STOREM(d + full, mout, MMT_LOADS2((int64_t)(ne1 - full), s + 2 * full));
        }
}

/* A window's MATMUL with fewer than MMT_PACK_M rows of C (read in place like a plain
 * one's B): the window's rows are gathered, as many as the packing buffer holds at a
 * time, into a dense k-chunk of B there, and every row block of C runs over the chunk
 * in place (C carries the running sums between chunks, which is exact). False: the
 * buffer holds fewer than 8 rows of B. */
MMT_TARGET static bool MMT_NAME(win_dense)(RtCore *c, const MMT_NAME(Args) *x) {
    size_t n = x->n, ne1 = x->ne1, ne0 = n / ne1, kb = RT_PACK_BYTES / 4 / n;
    if (x->m >= MMT_PACK_M || kb < 8)
        return false;
    MMT_NAME(Args) y = *x;
    y.b = c->pack;
    y.ldb = n;
    MMT_VI idx = MMT_IDX((int32_t)x->ns1);
    bool s2 = x->ns1 == 2;                        /* stride-2 pixel rows */
    MMT_M min = MMT_LANES((int64_t)(2 * ne1 - 1));
    MMT_M mout = MMT_LANES((int64_t)(ne1 - (ne1 - 1) / MMT_VL * MMT_VL));
    uint32_t i2 = 0, i1 = 0, i0 = 0;
    for (uint32_t k0 = 0; k0 < x->k; k0 += (uint32_t)kb) {
        uint32_t kc = x->k - k0 < kb ? x->k - k0 : (uint32_t)kb;
        for (uint32_t k = 0; k < kc; k++) {
            const float *row = x->b + i0 * x->ks0 + i1 * x->ks1 + i2 * x->ks2;
            if (s2)
                MMT_NAME(dense_s2)(x, c->pack + k * n, row, min, mout, idx);
            for (size_t r = 0; !s2 && r < ne0; r++)
                MMT_NAME(win_seg)(c->pack + k * n + r * ne1, row + (int64_t)r * x->ns0, ne1,
                                  x->ns1, idx, false);
            if (++i2 == x->ke2) {
                i2 = 0;
                if (++i1 == x->ke1)
                    i1 = 0, i0++;
            }
        }
        y.a = x->a + k0;
        for (uint32_t r0 = 0, rows; r0 < x->m; r0 += rows) {
            rows = MMT_NAME(block_rows)(x->m - r0);
            for (size_t j = 0; j < n; j += MMT_NR) {
                int64_t left = (int64_t)(n - j);
                MMT_NAME(micros)[rows](&y, y.b + j, n, r0, j, 0, kc, x->zero && k0 == 0,
                                       MMT_LANES(left), MMT_LANES(left - MMT_VL),
                                       MMT_INPLACE);
            }
        }
    }
    return true;
}

/* Room in the packing buffer, after the panel of kb rows that B read in place is
 * stored to, for all m rows of A packed MMT_AP floats apart (pack_a), or NULL (no
 * buffer, or too many rows): read in place, rows of A a multiple of 4 KiB apart
 * (bert_base's 3072-float activations) shared one L1 set, and the micro-kernel kept a
 * pointer per row, spilled to the stack (bert_base's m32 n96 k3072 tiles: GFLOP/s
 * numbers in mm_tiles). */
MMT_INLINE float *MMT_NAME(apack_room)(RtCore *c, const MMT_NAME(Args) *x, uint32_t kb) {
    size_t panel = (size_t)kb * MMT_NR, need = panel + (size_t)x->m * MMT_AP;
    if (!c->pack || kb > MMT_KCP || need * 4 > RT_PACK_BYTES)
        return NULL;
    return c->pack + panel;
}

/* A packed for k blocks of kb rows from the thread's cache (rt_acache.c): block q's
 * m rows MMT_AP floats apart at the result + q * m * MMT_AP, packed there first when
 * the cache does not hold them yet; NULL when A may change within the kernel
 * (!stable), does not fit, or is a first sight (then packed as usual). */
MMT_INLINE const float *MMT_NAME(acached)(RtCore *c, const MMT_NAME(Args) *x, bool stable,
                                           uint32_t kb) {
    if (!stable || !kb || !x->k || kb > MMT_KCP)
        return NULL;
    size_t nb = (x->k + kb - 1) / kb, blk = (size_t)x->m * MMT_AP;
    if (nb * blk * 4 > RT_ACACHE_BYTES)
        return NULL;
    RtAKey key = {x->a, x->lda, x->m, x->k, kb};
    bool fill;
    float *ac = rt_acache_take(c, &key, &fill);
    for (size_t q = 0; fill && q < nb; q++) {
        uint32_t k0 = (uint32_t)q * kb, kc = x->k - k0 < kb ? x->k - k0 : kb;
        MMT_NAME(pack_a)(x, ac + q * blk, 0, k0, kc, (int)x->m, 0);
    }
    return ac;
}

#include "rt_kern_mmv.h"
#include "rt_kern_mmn.h"
#include "rt_kern_mmc.h"
#include "rt_kern_mmr.h"

/* A constant plain B (a weight: bconst) kept packed for the session (rt_apre.c) as the
 * kernels below read it: k blocks of kb rows, each with every panel of MMT_NR columns
 * (the last one's lanes past n zero), block k0's panel p at the result + k0 * np *
 * MMT_NR + p * kc * MMT_NR (np panels, kc the block's rows); made the first time. NULL:
 * none (B may change, no room, or another thread is making it).
 *
 * In place, a weight's rows are kilobytes apart in DRAM: each k block's first row
 * block read its panels a line or two a row, prefetched by MMT_NAME(ahead), and its
 * multiply-adds waited on DRAM (bert_base's tiles from DRAM at 0.80-0.92 of their
 * speed with B in the caches, mm_tiles); packed, the panels are read as they lie, one
 * stream, and the first row block packs nothing. onnxruntime prepacks its weights the
 * same way. */
MMT_INLINE const float *MMT_NAME(bpre)(RtCore *c, const MMT_NAME(Args) *x, bool bconst,
                                       uint32_t kb) {
    if (!bconst || !c->apre || x->win || x->bt || !x->k || !x->n || kb >= (1u << 20))
        return NULL;
    size_t np = (x->n + MMT_NR - 1) / MMT_NR;
    RtAKey key = {x->b, x->ldb, x->n, x->k, RT_APRE_BPACK | kb | (uint32_t)MMT_VL << 20};
    bool fill;
    float *t = rt_apre_take(c->apre, &key, (size_t)x->k * np * MMT_NR * 4, &fill);
    if (!fill)
        return t;
    for (uint32_t k0 = 0; k0 < x->k; k0 += kb) {
        uint32_t kc = x->k - k0 < kb ? x->k - k0 : kb;
        for (size_t p = 0; p < np; p++) {
            float *panel = t + (size_t)k0 * np * MMT_NR + p * kc * MMT_NR;
            int64_t left = (int64_t)x->n - (int64_t)(p * MMT_NR);
            MMT_M m0 = MMT_LANES(left), m1 = MMT_LANES(left - MMT_VL);
            for (uint32_t r = 0; r < kc; r++) {
                const float *row = x->b + (size_t)(k0 + r) * x->ldb + p * MMT_NR;
                MMT_STORE(panel + (size_t)r * MMT_NR, MMT_LOADM(m0, row));
                MMT_STORE(panel + (size_t)r * MMT_NR + MMT_VL, MMT_LOADM(m1, row + MMT_VL));
            }
        }
    }
    rt_apre_filled(c->apre, &key);
    return t;
}

/* Block k0 (kc rows; kb rows a block) of bpre's copy kept, from column j0 (a multiple
 * of MMT_NR; n columns in all): its panel for j0; NULL when kept is. */
MMT_INLINE const float *MMT_NAME(bpre_at)(const float *kept, uint32_t k0, uint32_t kc,
                                           size_t j0, size_t n) {
    size_t np = (n + MMT_NR - 1) / MMT_NR;
    return kept ? kept + (size_t)k0 * np * MMT_NR + j0 / MMT_NR * kc * MMT_NR : NULL;
}

/* Runs a verified F32 MATMUL mm on core c (A and B where s says; a window's B is in LX)
 * with this instance's instruction set; false (nothing done) for a window this kernel
 * does not take (no packing buffer, a column stride too large for gather indices). */
MMT_TARGET static bool MMT_NAME(run)(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    bool win = mm->flags & ISA_F_BWIN;
    bool away = s->epi && s->epi->c;     /* C goes where the epilogue reads it */
    MMT_NAME(Args) x = {(const rt_f32 *)s->a, (const float *)s->b,
                        away ? (float *)s->epi->c : (float *)(c->lx + mm->c), s->lda, s->ldb,
                        away ? (size_t)s->epi->crs / 4 : mm->ldc, mm->m, mm->n, mm->k,
                        !(mm->flags & ISA_F_ACCUM), win, mm->bw_kext[1], mm->bw_kext[2],
                        mm->bw_next[1], s->bks0 ? s->bks0 : mm->bw_ks[0], mm->bw_ks[1],
                        mm->bw_ks[2], mm->bw_ns[0], mm->bw_ns[1], NULL, MMT_IDX(1), s->bt,
                        NULL, 0, 0, NULL, NULL, NULL, NULL, 0, s->epi, NULL, 0, 0, 0, 0, 0,
                        NULL, 0};
    if (win && x.ne1 == 1) {
        /* rows of one output pixel (a 1-d convolution: the codegen's canonical second
         * dim is a unit) as one row of n pixels ns0 apart: the same B, but the kernels
         * take it as one run a k row (pack_win cut a panel into a run per pixel, and
         * the channel-lane kernels want rows of at least two: a 1-d convolution of 512
         * channels at stride 2 ran at 40% of the FMA peak, most of it packing) */
        x.ne1 = x.n;
        x.ns1 = x.ns0;
        x.ns0 = 0;
    }
    if (win && (!c->pack || x.ns1 >= (1 << 26) || x.ns1 <= -(1 << 26)))
        return false;
    if (mm->m == 0 || mm->n == 0 || (win && MMT_NAME(win_chan)(c, &x, s->aconst)) ||
        (!win && MMT_NAME(plain_rows8)(c, &x, s->aconst)) ||
        (!win && MMT_NAME(plain_chan)(c, &x, s->bdram, s->bconst, s->aconst)))
        return true;      /* the channel-lane kernels and rows8 run x.epi themselves */
    if ((win && (MMT_NAME(win_inplace)(c, &x) || MMT_NAME(win_grid)(c, &x) ||
                 MMT_NAME(win_dense)(c, &x))) ||
        (!win && MMT_NAME(narrow)(c, &x))) {
        MMT_NAME(epi)(&x, 0, x.m, 0, x.n);   /* these kernels: over all of C at the end */
        return true;
    }
    if (!win && ((s->bt && mm->m <= MMT_GEMV_M) || mm->m <= MMT_GEMV_ROWS)) {
        const float *kept = x.bt ? NULL : MMT_NAME(gemv_brows)(c, &x, s->bconst);
        if (kept)
            x.b = kept, x.ldb = x.n;
        MMT_NAME(gemv_all)(&x);
        MMT_NAME(epi)(&x, 0, x.m, 0, x.n);
        return true;
    }
    if (!win && !x.bt && (mm->m < MMT_PACK_M || !c->pack)) { /* B read in place */
        /* a block of MMT_KC rows of B when it is larger than the L1 cache (B in
         * DRAM: a weight), every panel of it, every row block over each panel; the
         * calls prefetch the next block. The first row block reads the panel in place
         * and stores it packed as it goes; the others read that copy (B's rows are
         * kilobytes apart: in place they share a few L1 sets and came from L2 again
         * for every row block; one pass more over the block, packing it first, cost
         * more than it saved) */
        uint32_t kb = x.k > 2 * MMT_KC ? MMT_KC : x.k;
        MMT_NAME(Args) y = x;
        /* A's rows of the k block packed after the panel (MMT_NAME(pack_all_a)), or
         * all of A packed in the thread's cache */
        const float *ac = MMT_NAME(acached)(c, &x, s->astable, kb);
        float *ap = ac ? NULL : MMT_NAME(apack_room)(c, &x, kb);
        const float *kept = MMT_NAME(bpre)(c, &x, s->bconst, kb);  /* B's panels, packed */
        bool post = MMT_NAME(has_post)(&x);   /* the last k block's tiles: their chain */
        for (uint32_t k0 = 0; k0 < x.k || k0 == 0; k0 += kb) {
            uint32_t kc = x.k - k0 < kb ? x.k - k0 : kb, nk0 = k0 + kc;
            uint32_t nkc = x.k - nk0 < kb ? x.k - nk0 : kb;
            y.po = post && nk0 >= x.k ? x.epi->post : NULL;
            size_t t = 0;
            size_t calls = (x.n + MMT_NR - 1) / MMT_NR * (size_t)MMT_NAME(row_blocks)(x.m);
            const float *apk = ac ? ac + (size_t)(k0 / kb) * x.m * MMT_AP : ap;
            if (ap)
                MMT_NAME(pack_a)(&x, ap, 0, k0, kc, (int)x.m, 0);
            for (size_t j0 = 0; j0 < x.n; j0 += MMT_NR) {
                int64_t left = (int64_t)x.n - (int64_t)j0;
                size_t rb = 0;                /* the row block's index in the panel */
                for (uint32_t i0 = 0, rows; i0 < x.m; i0 += rows) {
                    rows = MMT_NAME(block_rows)(x.m - i0);
                    const float *kp = MMT_NAME(bpre_at)(kept, k0, kc, j0, x.n);
                    if (!kept && nkc)    /* the next block of k */
                        MMT_NAME(ahead)(&y, &x, t++, calls, nk0, nkc, 0, x.n);
                    else if (!kept)      /* the last one: the next panel of this block */
                        MMT_NAME(next_panel)(&y, &x, rb++, k0, kc, j0 + MMT_NR);
                    else {      /* the next panel: this block's, or the next block's first */
                        bool last = j0 + MMT_NR >= x.n;
                        MMT_NAME(kept_ahead)(&y, last ? MMT_NAME(bpre_at)(kept, nk0, nkc, 0, x.n)
                                                      : kp + (size_t)kc * MMT_NR,
                                             last ? nkc : kc, i0, MMT_NAME(block_rows)(x.m));
                    }
                    bool again = kept || (i0 > 0 && c->pack); /* the panel packed */
                    y.pk = !kept && i0 == 0 && rows < x.m && c->pack ? c->pack : NULL;
                    y.ap = apk ? apk + (size_t)i0 * MMT_AP : NULL;
                    int mode = again ? (apk ? MMT_PACKAB : MMT_PACKED)
                                     : (apk ? MMT_INPLACEA : MMT_INPLACE);
                    const float *bb = kp ? kp : again ? c->pack : x.b + k0 * x.ldb + j0;
                    MMT_NAME(micros)[rows](&y, bb, again ? MMT_NR : x.ldb, i0, j0, k0, kc,
                                           x.zero && k0 == 0, MMT_LANES(left),
                                           MMT_LANES(left - MMT_VL), mode);
                }
            }
            if (x.k == 0)
                break;
        }
        if (!post)    /* the chain over all of C at the end, a generic pass */
            MMT_NAME(epi)(&x, 0, x.m, 0, x.n);
        return true;
    }
    const float *ac = MMT_NAME(acached)(c, &x, s->astable, MMT_KCP);
    const float *kept = MMT_NAME(bpre)(c, &x, s->bconst, MMT_KCP);  /* B's panels, packed */
    for (uint32_t k0 = 0; k0 < x.k || k0 == 0; k0 += MMT_KCP) {
        uint32_t kc = x.k - k0 < MMT_KCP ? x.k - k0 : MMT_KCP;
        const float *apk = ac ? ac + (size_t)(k0 / MMT_KCP) * x.m * MMT_AP : NULL;
        for (size_t j0 = 0; j0 < x.n; j0 += MMT_NC) {
            size_t nc = x.n - j0 < MMT_NC ? x.n - j0 : MMT_NC, nj0 = j0 + nc;
            uint32_t nk0 = nj0 < x.n ? k0 : k0 + kc;   /* the next block */
            uint32_t nkc = x.k - nk0 < MMT_KCP ? x.k - nk0 : MMT_KCP;
            nj0 = nj0 < x.n ? nj0 : 0;
            MMT_NAME(packed_block)(&x, c->pack, k0, kc, j0, nc, nk0, nkc, nj0,
                                   x.n - nj0 < MMT_NC ? x.n - nj0 : MMT_NC, apk,
                                   MMT_NAME(bpre_at)(kept, k0, kc, j0, x.n));
        }
        if (x.k == 0)
            break;
    }
    return true;
}

/* Whether run takes mm (F32, not a window) by the packed blocks: A and B packed. */
bool MMT_PACKS(const RtCore *c, const SpyMatmul *mm) {
    return rt_host_has(MMT_FEATURE) && c->pack && mm->m >= MMT_PACK_M;
}

/* Runs a verified F32 MATMUL (A and B where s says) with this instance's instruction
 * set; false (nothing done) on a host without it, or a window it does not take. */
bool MMT_EXPORT(RtCore *c, const SpyMatmul *mm, const RtMmSrc *s) {
    return rt_host_has(MMT_FEATURE) && MMT_NAME(run)(c, mm, s);
}
