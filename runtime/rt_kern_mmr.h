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
#define MMR_TAIL 4           /* last columns past whole vectors done apart, at most */
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
    if (k0 + kc == x->k && x->po && x->po->nreg == x->po->n) {
        /* final, a chain of register forms only: run on the accumulators, two vectors
         * of each row and then the third, and stored (no staging for post_block) */
        MMT_M mfull = MMT_LANES(MMT_VL), m0 = NV == 1 ? m : mfull, m1 = NV == 2 ? m : mfull;
        MMT_V w[MMR_ROWS][2];
#pragma GCC unroll 8
        for (int r = 0; r < MMR_ROWS; r++)
            w[r][0] = acc[r][0], w[r][1] = NV >= 2 ? acc[r][1] : acc[r][0];
        MMT_NAME(post_regs_store)(x->po, w, MMR_ROWS, NV >= 2 ? 2 : 1, x->prow + i0, j, m0, m1,
                                  cb, x->ldc);
        if (NV == 3) {
#pragma GCC unroll 8
            for (int r = 0; r < MMR_ROWS; r++)
                w[r][0] = acc[r][NV - 1];
            MMT_NAME(post_regs_store)(x->po, w, MMR_ROWS, 1, x->prow + i0, j + 2 * MMT_VL, m, m,
                                      cb + 2 * MMT_VL, x->ldc);
        }
        return;
    }
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

/* The last t (at most MMR_TAIL) columns of C from column jt, rows [g0, g0 + MV *
 * MMT_VL) (a group of A's transpose at at, MV * MMT_VL floats a k), over all of k with
 * the channels in the lanes: per k, MV loads of A's column and t broadcasts of B. The
 * columns a whole vector of pixels would have wasted most of its lanes on (resnet50's
 * 49 pixels: 48 by rows8, the 49th here). Starts from 0 or C; stores to C or through
 * the chain x->po, the MV * MMT_VL x t tile transposed on the stack. */
MMT_INLINE void MMT_NAME(rows8_tail)(const MMT_NAME(Args) *x, const float *at, size_t g0,
                                      size_t jt, size_t t, const int MV) {
    _Alignas(64) float tb[2 * MMT_VL * MMT_VL];      /* C's rows, MMT_VL floats apart */
    MMT_V acc[2][MMR_TAIL];
    float *cg = x->c + g0 * x->ldc + jt;
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++)
        for (size_t p = 0; p < MMR_TAIL; p++) {
            if (x->zero || p >= t) {
                acc[v][p] = MMT_ZERO();
                continue;
            }
            for (int i = 0; i < MMT_VL; i++)
                tb[i] = cg[(size_t)(v * MMT_VL + i) * x->ldc + p];
            acc[v][p] = MMT_LOAD(tb);
        }
    const float *bk = x->b + jt;
    for (uint32_t k = 0; k < x->k; k++, bk += x->ldb, at += MV * MMT_VL) {
        MMT_V a0 = MMT_LOAD(at), a1 = MV == 2 ? MMT_LOAD(at + MMT_VL) : a0;
#pragma GCC unroll 4
        for (size_t p = 0; p < MMR_TAIL; p++) {
            if (p >= t)
                break;
            MMT_V bb = MMT_SET1(bk[p]);
            acc[0][p] = MMT_FMA(a0, bb, acc[0][p]);
            if (MV == 2)
                acc[1][p] = MMT_FMA(a1, bb, acc[1][p]);
        }
    }
    _Alignas(64) float lane[MMT_VL];
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++)
        for (size_t p = 0; p < t; p++) {
            MMT_STORE(lane, acc[v][p]);
            for (int i = 0; i < MMT_VL; i++)
                tb[(size_t)(v * MMT_VL + i) * MMT_VL + p] = lane[i];
        }
    if (x->po) {
        MMT_NAME(post_block)(x->po, tb, MMT_VL, cg, x->ldc, x->prow + g0,
                             (size_t)MV * MMT_VL, jt, t);
        return;
    }
    for (size_t r = 0; r < (size_t)MV * MMT_VL; r++)
        for (size_t p = 0; p < t; p++)
            cg[r * x->ldc + p] = tb[r * MMT_VL + p];
}

MMT_TARGET static void MMT_NAME(rows8_tail_1)(const MMT_NAME(Args) *x, const float *at,
                                              size_t g0, size_t jt, size_t t) {
    MMT_NAME(rows8_tail)(x, at, g0, jt, t, 1);
}
MMT_TARGET static void MMT_NAME(rows8_tail_2)(const MMT_NAME(Args) *x, const float *at,
                                              size_t g0, size_t jt, size_t t) {
    MMT_NAME(rows8_tail)(x, at, g0, jt, t, 2);
}

/* A plain MATMUL of whole vectors' worth of rows of C (at most MMR_MAXV), B in place
 * and not transposed, A a constant whose transpose the session keeps or makes
 * (chan_pre: groups of two vectors' worth of rows, the last one or two, each k rows of
 * 32 or 16 floats), at least two vectors of pixels with at most a third of them lost
 * in the last vector's lanes: C's columns in blocks of up to MMR_NV vectors (as equal
 * as they come), each block a k-chunk at a time (its rows of B and A's in L1, MMR_L1),
 * every row block over a chunk. The first column block prefetches A's transpose, a
 * line of each group's k row from its first row block of each vector. With one vector
 * of rows, up to MMR_TAIL columns past whole vectors go to rows8_tail (resnet50's 49
 * pixels: 48 + 1 was 18-22% faster in the model than 64 lanes for 49, itself 10%
 * faster than the channel lanes; with more rows the blocked kernels stay faster).
 * Runs x's epilogue too. False: not this way. */
MMT_TARGET static bool MMT_NAME(plain_rows8)(RtCore *c, MMT_NAME(Args) *x, bool aconst) {
    static const MMT_NAME(Rows8Fn) fns[MMR_NV + 1] = {NULL, MMT_NAME(rows8_1),
                                                      MMT_NAME(rows8_2), MMT_NAME(rows8_3)};
    size_t tail = x->m == MMT_VL && x->n % MMT_VL <= MMR_TAIL ? x->n % MMT_VL : 0;
    size_t nmain = x->n - tail;
    size_t nv = (nmain + MMT_VL - 1) / MMT_VL;
    if (x->win || x->bt || x->m % MMT_VL || x->m > MMR_MAXV * MMT_VL || nv < 2 ||
        (nv * MMT_VL - nmain) * 3 > nmain ||
        (x->m > MMT_VL && (nmain % MMT_VL || nmain % MMT_NR == 0)))
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
        MMT_M m = MMT_LANES((int64_t)nmain - (int64_t)(j + (w - 1) * MMT_VL));
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
    for (size_t g0 = 0; tail && g0 < x->m; g0 += 2 * MMT_VL) {   /* the last columns */
        if (x->m - g0 >= 2 * MMT_VL)
            MMT_NAME(rows8_tail_2)(x, at + g0 * x->k, g0, nmain, tail);
        else
            MMT_NAME(rows8_tail_1)(x, at + g0 * x->k, g0, nmain, tail);
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
