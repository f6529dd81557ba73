/* rt_kern_mmw.h: the micro-kernel of a window MATMUL with one or two rows of C (a
 * convolution split one or two output channels a core), included by rt_kern_mmt.h
 * (its MMT_* parameters and MMT_NAME(Args) in scope).
 *
 * With one row of C the register micro-kernel of rt_kern_mmt.h keeps two accumulators,
 * and each k waits for the previous fused multiply-add of the same accumulator: the
 * product runs at the latency of an FMA, not at its rate. This one takes up to
 * MMW_T blocks of MMT_NR columns at once (the pixel rows of win_inplace, the grid
 * columns of win_grid; each block's B rows at its own base plus the window's row
 * offsets x->koff), so every k has 2 * MMW_T (or 4 * MMW_T) independent chains. Each
 * element still accumulates its products in increasing k from 0 or the old C, one
 * fused multiply-add each: the bits are those of the other kernels.
 */

#if MMT_VL == 16
#define MMW_T 4              /* column blocks a call: 8 or 16 zmm accumulators */
#else
#define MMW_T 2              /* 16 ymm registers: at most 8 accumulators */
#endif

/* One block of MMT_NR columns of C: B row k at b + koff[k], C columns from j, the
 * lanes of its two vectors (masks, and their counts for column stride 2). */
typedef struct {
    const float *b;
    size_t j;
    MMT_M m0, m1;
} MMT_NAME(WBlk);

/* C rows [i0, i0 + R) (R 1 or 2) over all k for the T blocks bl; zero starts from 0
 * instead of C; mode MMT_KOFF (B columns contiguous) or MMT_KOFF2 (stride 2). */
MMT_INLINE void MMT_NAME(wmicro)(const MMT_NAME(Args) *x, const MMT_NAME(WBlk) *bl,
                                  size_t i0, bool zero, const int mode, const int R,
                                  const int T) {
    MMT_V acc[2][MMW_T][2];
    int64_t n[MMW_T][2];
#pragma GCC unroll 8
    for (int t = 0; t < T; t++) {
        n[t][0] = MMT_MCOUNT(bl[t].m0);
        n[t][1] = MMT_MCOUNT(bl[t].m1);
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            const float *c = x->c + (i0 + r) * x->ldc + bl[t].j;
            acc[r][t][0] = zero ? MMT_ZERO() : MMT_LOADM(bl[t].m0, c);
            acc[r][t][1] = zero ? MMT_ZERO() : MMT_LOADM(bl[t].m1, c + MMT_VL);
        }
    }
    const rt_f32 *a0 = x->a + i0 * x->lda, *a1 = a0 + (R == 2 ? x->lda : 0);
    /* the next row offset read a k step ahead (rt_kern_mmc.h chan_micro says why) */
    const int32_t *koff = x->koff;
    int32_t onext = x->k ? koff[0] : 0;
    for (uint32_t k = 0; k < x->k; k++) {
        MMT_V av0 = MMT_SET1(a0[k]), av1 = R == 2 ? MMT_SET1(a1[k]) : av0;
        int32_t o = onext;
        onext = koff[k + 1 < x->k ? k + 1 : k];
#pragma GCC unroll 8
        for (int t = 0; t < T; t++) {
            const float *bk = bl[t].b + o;
            MMT_V b0, b1;
            if (mode == MMT_KOFF2) {
                b0 = MMT_LOADS2(n[t][0], bk);
                b1 = MMT_LOADS2(n[t][1], bk + 2 * MMT_VL);
            } else {
                b0 = MMT_LOADM(bl[t].m0, bk);
                b1 = MMT_LOADM(bl[t].m1, bk + MMT_VL);
            }
            acc[0][t][0] = MMT_FMA(av0, b0, acc[0][t][0]);
            acc[0][t][1] = MMT_FMA(av0, b1, acc[0][t][1]);
            if (R == 2) {
                acc[1][t][0] = MMT_FMA(av1, b0, acc[1][t][0]);
                acc[1][t][1] = MMT_FMA(av1, b1, acc[1][t][1]);
            }
        }
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; t++)
#pragma GCC unroll 2
        for (int r = 0; r < R; r++) {
            float *c = x->c + (i0 + r) * x->ldc + bl[t].j;
            MMT_STOREM(c, bl[t].m0, acc[r][t][0]);
            MMT_STOREM(c + MMT_VL, bl[t].m1, acc[r][t][1]);
        }
}

/* The wide micro-kernel for R rows and T blocks, one function each (the
 * accumulators in registers), both modes. */
#define MMW_FN(R, T)                                                                     \
    MMT_TARGET static void MMT_NAME(wmicro_##R##_##T)(const MMT_NAME(Args) *x,            \
                                                      const MMT_NAME(WBlk) *bl, size_t i0, \
                                                      bool zero, int mode) {             \
        if (mode == MMT_KOFF2)                                                           \
            MMT_NAME(wmicro)(x, bl, i0, zero, MMT_KOFF2, R, T);                          \
        else                                                                             \
            MMT_NAME(wmicro)(x, bl, i0, zero, MMT_KOFF, R, T);                           \
    }

MMW_FN(1, 1)
MMW_FN(1, 2)
MMW_FN(2, 1)
MMW_FN(2, 2)
#if MMW_T == 4
MMW_FN(1, 3)
MMW_FN(1, 4)
MMW_FN(2, 3)
MMW_FN(2, 4)
#endif

typedef void (*MMT_NAME(WFn))(const MMT_NAME(Args) *, const MMT_NAME(WBlk) *, size_t, bool,
                              int);
static const MMT_NAME(WFn) MMT_NAME(wmicros)[2][MMW_T] = {
#if MMW_T == 4
    {MMT_NAME(wmicro_1_1), MMT_NAME(wmicro_1_2), MMT_NAME(wmicro_1_3),
     MMT_NAME(wmicro_1_4)},
    {MMT_NAME(wmicro_2_1), MMT_NAME(wmicro_2_2), MMT_NAME(wmicro_2_3),
     MMT_NAME(wmicro_2_4)},
#else
    {MMT_NAME(wmicro_1_1), MMT_NAME(wmicro_1_2)},
    {MMT_NAME(wmicro_2_1), MMT_NAME(wmicro_2_2)},
#endif
};

/* Blocks gathered for the wide micro-kernel of rows [i0, i0 + rows) (rows 1 or 2),
 * run cap at a time as they come (MMT_NAME(wcap)). */
typedef struct {
    const MMT_NAME(Args) *x;
    size_t i0;
    uint32_t rows;
    bool zero;
    int mode;
    int cap;
    int nb;
    MMT_NAME(WBlk) bl[MMW_T];
} MMT_NAME(WQueue);

/* Blocks a call for nb blocks in all: as few calls as MMW_T a call would take, with
 * blocks spread evenly over them (5 blocks as 3 + 2, not 4 + 1: a call of one block
 * of two rows has 4 chains, and runs at the latency of an FMA). */
static inline int MMT_NAME(wcap)(size_t nb) {
    size_t calls = (nb + MMW_T - 1) / MMW_T;
    return calls ? (int)((nb + calls - 1) / calls) : MMW_T;
}

/* Runs the blocks gathered in q, if any. */
MMT_INLINE void MMT_NAME(wflush)(MMT_NAME(WQueue) *q) {
    if (q->nb)
        MMT_NAME(wmicros)[q->rows - 1][q->nb - 1](q->x, q->bl, q->i0, q->zero, q->mode);
    q->nb = 0;
}

/* Adds the block of C columns [j, j + left) (at most MMT_NR) whose B rows are at b +
 * koff[k] to q, running q when it holds cap blocks. */
MMT_INLINE void MMT_NAME(wpush)(MMT_NAME(WQueue) *q, const float *b, size_t j,
                                 int64_t left) {
    q->bl[q->nb++] = (MMT_NAME(WBlk)){b, j, MMT_LANES(left), MMT_LANES(left - MMT_VL)};
    if (q->nb == q->cap)
        MMT_NAME(wflush)(q);
}
