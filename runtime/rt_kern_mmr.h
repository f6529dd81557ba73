/* rt_kern_mmr.h: a plain MATMUL with pixels in the lanes and A read from its kept
 * transpose, for whole vectors' worth of rows of C where the other kernels lose lanes
 * or loads; included by rt_kern_mmt.h after rt_kern_mmc.h (its MMT_* parameters,
 * MMT_NAME(Args), post_block and chan_pre in scope).
 *
 * One vector of rows (16 output channels a core over a 1 x 1 convolution's pixels:
 * resnet50's stages 3 and 4, k 1024 and 2048): the channel-lane kernel (rt_kern_mmc.h)
 * does one broadcast of B per multiply-add, and on AMD Zen 5 (two 512-bit FMAs a
 * cycle) the loads bound that below 87% of the FMA peak even in L1 (a synthetic loop);
 * on these tiles it reached 70-75%. More vectors of rows over n a whole number of
 * vectors but not of panels (resnet50's 112 pixels of stage 2): the pixel-lane blocked
 * kernels' last panel is half empty. (Over whole panels they stay faster: stage 1's
 * 224 pixels ran 10-20% slower here.)
 *
 * A call computes 8 rows of C over up to MMR_NV vectors of pixels: per k, NV vector
 * loads of B's row k (in place, rows ldb apart) and 8 broadcasts of A's column k from
 * the transpose chan_pre keeps (16 or 32 floats a k: its groups of rows), 8 * NV
 * multiply-adds; C's rows are stored as they are, without transposes. Every row block
 * runs over a column block one k-chunk at a time (its rows of B and A in L1: the first
 * block prefetches B's lines MMR_BPF rows ahead, the others find them there), the
 * running sums on the stack between chunks. The first column block's calls prefetch
 * A's transpose MMR_PF rows of k ahead: each core's A is another weight, streamed
 * from DRAM once an inference, and without it the loads of A waited on DRAM (resnet50,
 * 1 thread: its 16-row kernels 14% slower).
 *
 * Each C element accumulates a_ik * b_kj in increasing k from 0 (or the old C), one
 * fused multiply-add each: the bits of the other kernels.
 */

#if MMT_VL == 16
#define MMR_ROWS 8           /* rows of C a call: 8 broadcasts a k */
#define MMR_NV 3             /* vectors of pixels a call at most: 24 accumulators */
#define MMR_KC 128           /* k rows a chunk at most */
#define MMR_L1 (32u << 10)   /* bytes of B's and A's rows a chunk (L1: 48 KiB) */
#define MMR_BPF 8            /* k rows ahead the first row block prefetches B's lines */
#define MMR_MAXV 8           /* vectors' worth of rows of C at most (the running sums) */
#define MMR_PF 128           /* k rows ahead A's transpose is prefetched (16 floats a row;
                                64 rows ahead was 1-2% slower, 256 the same) */

/* Rows [i0, i0 + MMR_ROWS) of C, columns [j, j + NV * MMT_VL) (the last vector's lanes
 * m), k rows [k0, k0 + kc): A's transpose of these rows at (ast floats a k); pf:
 * prefetch it MMR_PF rows ahead. Starts from 0 (zero) or C when k0 is 0, else
 * from the running sums at ts; ends in ts unless the chunk is the last, else stores to
 * C or through the chain x->po (final). */
MMT_INLINE void MMT_NAME(rows8)(const MMT_NAME(Args) *x, const float *at, size_t ast,
                                 size_t i0, size_t j, uint32_t k0, uint32_t kc, MMT_M m,
                                 float *ts, bool pf, const int NV) {
    MMT_V acc[MMR_ROWS][MMR_NV];
#pragma GCC unroll 8
    for (int r = 0; r < MMR_ROWS; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            const float *cr = x->c + (i0 + r) * x->ldc + j + v * MMT_VL;
            acc[r][v] = k0      ? MMT_LOAD(ts + (size_t)(r * MMR_NV + v) * MMT_VL)
                        : x->zero ? MMT_ZERO()
                        : v == NV - 1 ? MMT_LOADM(m, cr)
                                      : MMT_LOADU(cr);
        }
    const float *bk = x->b + k0 * x->ldb + j, *ak = at + (size_t)k0 * ast;
    for (uint32_t k = 0; k < kc; k++, bk += x->ldb, ak += ast) {
        if (pf)
            __builtin_prefetch(ak + MMR_PF * ast, 0, 3);
        if (i0 == 0)         /* B's rows MMR_BPF ahead, into L1 for every row block */
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
                __builtin_prefetch(bk + MMR_BPF * x->ldb + v * MMT_VL, 0, 3);
        MMT_V b[MMR_NV];
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++)
            b[v] = v == NV - 1 ? MMT_LOADM(m, bk + v * MMT_VL) : MMT_LOADU(bk + v * MMT_VL);
#pragma GCC unroll 8
        for (int r = 0; r < MMR_ROWS; r++) {
            MMT_V a = MMT_SET1(ak[r]);
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
                acc[r][v] = MMT_FMA(a, b[v], acc[r][v]);
        }
    }
    float *cb = x->c + i0 * x->ldc + j;
    if (k0 + kc < x->k || x->po) {      /* running sums, or the tile for the chain */
#pragma GCC unroll 8
        for (int r = 0; r < MMR_ROWS; r++)
#pragma GCC unroll 3
            for (int v = 0; v < NV; v++)
                MMT_STORE(ts + (size_t)(r * MMR_NV + v) * MMT_VL, acc[r][v]);
        if (k0 + kc < x->k)
            return;
        size_t cols = (size_t)(NV - 1) * MMT_VL + (size_t)__builtin_popcount((unsigned)m);
        for (size_t c0 = 0; c0 < cols; c0 += 2 * MMT_VL)   /* final: through the chain */
            MMT_NAME(post_block)(x->po, ts + c0, MMR_NV * MMT_VL, cb + c0, x->ldc,
                                 x->prow + i0, MMR_ROWS, j + c0,
                                 cols - c0 < 2 * MMT_VL ? cols - c0 : 2 * MMT_VL);
        return;
    }
#pragma GCC unroll 8
    for (int r = 0; r < MMR_ROWS; r++)
#pragma GCC unroll 3
        for (int v = 0; v < NV; v++) {
            if (v == NV - 1)
                MMT_STOREM(cb + r * x->ldc + v * MMT_VL, m, acc[r][v]);
            else
                MMT_STOREU(cb + r * x->ldc + v * MMT_VL, acc[r][v]);
        }
}

/* rows8 with NV a constant (the accumulators in registers). */
#define MMR_FN(NV)                                                                        \
    MMT_TARGET static void MMT_NAME(rows8_##NV)(const MMT_NAME(Args) * x, const float *at, \
                                                size_t ast, size_t i0, size_t j, uint32_t k0, \
                                                uint32_t kc, MMT_M m, float *ts, bool pf) { \
        MMT_NAME(rows8)(x, at, ast, i0, j, k0, kc, m, ts, pf, NV);                        \
    }
MMR_FN(1)
MMR_FN(2)
MMR_FN(3)
#undef MMR_FN

typedef void (*MMT_NAME(Rows8Fn))(const MMT_NAME(Args) *, const float *, size_t, size_t,
                                  size_t, uint32_t, uint32_t, MMT_M, float *, bool);

/* A plain MATMUL of whole vectors' worth of rows of C (at most MMR_MAXV), B in place
 * and not transposed, A a constant whose transpose the session keeps or makes
 * (chan_pre: groups of two vectors' worth of rows, the last one or two, each k rows of
 * 32 or 16 floats), at least two vectors of pixels with at most a third of n lost in
 * the last vector's lanes (resnet50's 49 pixels: 15 lanes of 64, still 10% faster in
 * the model than the channel lanes): C's columns in blocks of up to MMR_NV vectors (as
 * equal as they come), each block a k-chunk at a time (its rows of B and A's in L1,
 * MMR_L1), every row block over a chunk. The first column block prefetches A's
 * transpose, a line of each group's k row from its first row block of each vector.
 * Runs x's epilogue too. False: not this way. */
MMT_TARGET static bool MMT_NAME(plain_rows8)(RtCore *c, MMT_NAME(Args) *x, bool aconst) {
    static const MMT_NAME(Rows8Fn) fns[MMR_NV + 1] = {NULL, MMT_NAME(rows8_1),
                                                      MMT_NAME(rows8_2), MMT_NAME(rows8_3)};
    size_t nv = (x->n + MMT_VL - 1) / MMT_VL;
    if (x->win || x->bt || x->m % MMT_VL || x->m > MMR_MAXV * MMT_VL || nv < 2 ||
        (nv * MMT_VL - x->n) * 3 > x->n ||
        (x->m > MMT_VL && (x->n % MMT_VL || x->n % MMT_NR == 0)))
        return false;
    const float *at = MMT_NAME(chan_pre)(c, x, aconst);
    if (!at)
        return false;
    x->po = MMT_NAME(has_post)(x) ? x->epi->post : NULL;
    size_t nblk = (nv + MMR_NV - 1) / MMR_NV, per = (size_t)x->m * 4 + MMR_NV * MMT_VL * 4;
    uint32_t kmax = (uint32_t)(MMR_L1 / per) < MMR_KC ? (uint32_t)(MMR_L1 / per) : MMR_KC;
    uint32_t nch = (x->k + kmax - 1) / kmax, kch = nch ? (x->k + nch - 1) / nch : 0;
    _Alignas(64) float ts[MMR_MAXV * MMT_VL * MMR_NV * MMT_VL];  /* running sums */
    for (size_t q = 0, v0 = 0; q < nblk; q++) {
        size_t w = (nv - v0 + (nblk - q) - 1) / (nblk - q), j = v0 * MMT_VL;
        MMT_M m = MMT_LANES((int64_t)x->n - (int64_t)(j + (w - 1) * MMT_VL));
        uint32_t k0 = 0;
        do {
            uint32_t kc = x->k - k0 < kch ? x->k - k0 : kch;
            for (size_t i0 = 0; i0 < x->m; i0 += MMR_ROWS) {
                size_t g0 = i0 / (2 * MMT_VL) * (2 * MMT_VL);   /* its group of rows */
                size_t ast = x->m - g0 >= 2 * MMT_VL ? 2 * MMT_VL : MMT_VL;
                fns[w](x, at + g0 * x->k + (i0 - g0), ast, i0, j, k0, kc, m,
                       ts + i0 * MMR_NV * MMT_VL, q == 0 && i0 % MMT_VL == 0);
            }
            k0 += kc;
        } while (k0 < x->k);
        v0 += w;
    }
    if (!x->po)
        MMT_NAME(epi)(x, 0, x->m, 0, x->n);
    return true;
}
#else
/* Vectors of 8 floats: not taken (the channel-lane kernels' 16 accumulators a vector
 * leave these no advantage worth a second tuning). */
MMT_TARGET static bool MMT_NAME(plain_rows8)(RtCore *c, MMT_NAME(Args) *x, bool aconst) {
    (void)c, (void)x, (void)aconst;
    return false;
}
#endif
