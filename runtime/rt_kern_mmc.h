/* rt_kern_mmc.h: a MATMUL with channels in the vector lanes, included by
 * rt_kern_mmt.h (its MMT_* parameters and MMT_NAME(Args) in scope).
 *
 * A convolution split over the 32 cores by output channels leaves each core one or two
 * vectors' worth of rows of C (resnet50's 3 x 3 convolutions: 16 channels) over pixel
 * rows of awkward widths (7, 14, 28, 56). The other kernels put pixels in the lanes: a
 * row of 7 or 14 pixels fills half or less of a 2-vector block, and a row block of C is
 * 8 rows, so each k does 16 FMAs on lanes that are up to half empty. Here C is computed
 * transposed: MV (1 or 2) vectors of channels times R pixels of one pixel row, R
 * accumulators per vector; per k one vector load of A's transpose per MV (packed once
 * per group of rows, MMT_VL x MMT_VL blocks transposed in registers) and one broadcast
 * per pixel, every lane useful. C is transposed back in registers (one MMT_VL x MMT_VL
 * transpose per vector; R <= MMT_VL) when it is stored (and loaded, for ACCUM). More
 * rows of C (a window's, up to MMC_WIN_V vectors: resnet50's stride-2 1 x 1
 * convolutions, 128 channels a core; a plain B that fits in L2 with k from
 * MMC_PLAIN_K) run in groups of two vectors' worth, each over the whole window again
 * (it is in LX, in the host's caches). Pixel rows of at most half the accumulators run
 * two a call (chan2s). With one vector, a window whose rows are 3 or 7 taps one float
 * apart runs k in groups of those taps (chant_*, chanw_*): a broadcast then serves
 * every tap and pixel that reads the same float. A long k runs in chunks that stay in
 * L1 (chan_rows), the running sums kept transposed in the packing buffer between
 * chunks. A constant A (a weight) is transposed once for the session and kept
 * (chan_pre, rt_apre.c).
 *
 * Each C element accumulates a_ik * b_kj in increasing k from 0 (or the old C), one fused
 * multiply-add each (fma(a, b, c) = fma(b, a, c)): the bits of the other kernels.
 */

#define MMC_WIN_V (128 / MMT_VL) /* vectors' worth of rows of C a window takes, at most:
                                128 rows (resnet50's stride-2 1 x 1 convolutions) */
#define MMC_TAPSW 7          /* taps of a wide group (the chanw_* functions: a 7 x 7
                                window's rows, resnet50's stem), one vector of channels */
#if MMT_VL == 16
#define MMC_R1 16            /* pixels a call, one vector of channels: 16 zmm accumulators */
#define MMC_R2 14            /* two vectors: 28 zmm accumulators */
#define MMC_PLAIN_V MMC_WIN_V /* vectors' worth of rows a plain B takes from MMC_PLAIN_K */
#else
#define MMC_R1 8             /* 16 ymm registers */
#define MMC_R2 6
#define MMC_PLAIN_V 2        /* more did not pay for the transposes on AMD Zen 3 (the
                                pixel-lane kernels: m64 n49 k512 -11%, m64 n196 k256 -8%) */
#endif

/* A's transpose for win_chan: at, MV * MMT_VL floats a k (row i of A at lane i), rows
 * [ka, kb) of k (at row k at at + k * MV * MMT_VL, wherever the range starts);
 * MMT_VL x MMT_VL blocks through registers, a last partial block zero-filled past kb
 * (its rows past kb are not stored). */
MMT_INLINE void MMT_NAME(chan_pack_a)(const MMT_NAME(Args) *x, float *at, int mv, uint32_t ka,
                                       uint32_t kb) {
    for (int v = 0; v < mv; v++)
        for (uint32_t k0 = ka; k0 < kb; k0 += MMT_VL) {
            MMT_V t[MMT_VL];
            MMT_M mk = MMT_LANES((int64_t)kb - k0);
            uint32_t nk = kb - k0 < MMT_VL ? kb - k0 : MMT_VL;
#pragma GCC unroll 16
            for (int i = 0; i < MMT_VL; i++)
                t[i] = MMT_LOADM(mk, x->a + (size_t)(v * MMT_VL + i) * x->lda + k0);
            MMT_TRANSPOSE(t);
            for (uint32_t i = 0; i < nk; i++)
                MMT_STORE(at + (size_t)(k0 + i) * mv * MMT_VL + v * MMT_VL, t[i]);
        }
}

/* Cache lines of A's next k-chunk prefetched a chan_micro call at most, one a k step
 * (x->pfp, x->pfpn): rows of A are kilobytes apart (usually a weight streamed from
 * DRAM) and chan_pack_a, in one pass before a chunk's multiply-adds, waited on them
 * (resnet50: about a tenth of its time); prefetched while the previous chunk's
 * multiply-adds run, they are there when it comes (in bursts between calls the
 * prefetches themselves waited for fill buffers). */
#define MMC_PF_MAX 1024
#define MMC_PF_AHEAD 1       /* chunks ahead a kept transpose is prefetched: the next
                                (AMD Zen 5, resnet50: 2 chunks ahead 1.5-2% slower,
                                4 ahead 3% slower: presumably lines fetched that
                                early left L2 before their chunk came) */

/* Lists in tab (room for MMC_PF_MAX) the cache lines of rows [0, rows) of A from a
 * (x->lda apart), its k range [k0, k0 + kc), row by row; their number (0 when a is
 * NULL). */
MMT_INLINE uint32_t MMT_NAME(chan_pf_lines)(const MMT_NAME(Args) *x, const char **tab,
                                             const rt_f32 *a, uint32_t rows, uint32_t k0,
                                             uint32_t kc) {
    if (!a || !kc)
        return 0;
    uintptr_t s = (uintptr_t)(a + k0) & ~(uintptr_t)63, e = (uintptr_t)(a + k0 + kc);
    size_t lines = (e - s + 63) / 64, n = 0;
    for (uint32_t r = 0; r < rows; r++)
        for (size_t l = 0; l < lines && n < MMC_PF_MAX; l++)
            tab[n++] = (const char *)s + r * x->lda * 4 + l * 64;
    return (uint32_t)n;
}

/* chan_micro's prefetches at k step k (G rows): the next chunk of A (chan_pf_lines), a
 * line a k row while any are left, into L1 (with its window rows a chunk stays there
 * for every call over it; prefetched only into L2, the first call of each chunk read
 * its A from L2: resnet50's 7 x 7 maps take 4 calls a chunk, and the whole model, 2
 * threads, ran 0.46-0.59% slower in two runs of 14 and 16 alternating pairs). */
MMT_INLINE void MMT_NAME(chan_pf)(const MMT_NAME(Args) *x, uint32_t k, const int G) {
#pragma GCC unroll 8
    for (int g = 0; g < G; g++)
        if (k + g < x->pfpn)
            __builtin_prefetch(x->pfc ? x->pfc + (size_t)(k + g) * 64 : x->pfp[k + g], 0, 3);
}

/* One k step of chan_micro (G rows of k from its offset bk; with R1, the second pixel
 * row from bk2) into the accumulators acc, A's transpose from *at on (advanced past
 * the step). */
MMT_INLINE void MMT_NAME(chan_step)(MMT_V acc[2][MMC_R1], const float **atp, const float *bk,
                                     const float *bk2, const int MV, const int R, const int S,
                                     const int R1, const int G, const int ROUT) {
    const float *at = *atp;
    *atp += G * MV * MMT_VL;
    /* A wide group (ROUT: G = MMC_TAPSW, one vector): its G vectors of A loaded
     * first, then per pixel its G broadcasts, of which a pixel S floats further
     * shares G - S with the one before (S 2: 7 + 2 a pixel after the first; loaded
     * a tap at a time, the broadcasts of all R pixels were live across the taps, more
     * than the registers). Resnet50's 7 x 7 stem at stride 2, one thread, its tile
     * warm: 232 -> 252 GFLOP/s (mm_tiles). Each accumulator still takes k in
     * increasing order. */
    if (ROUT) {
        MMT_V ag[MMC_TAPSW];
#pragma GCC unroll 8
        for (int g = 0; g < G; g++)
            ag[g] = MMT_LOAD(at + g * MMT_VL);
        at += G * MMT_VL;
#pragma GCC unroll 16
        for (int r = 0; r < R; r++)
#pragma GCC unroll 8
            for (int g = 0; g < G; g++)
                acc[0][r] = MMT_FMA(ag[g], MMT_SET1(bk[r * S + g]), acc[0][r]);
        return;
    }
#pragma GCC unroll 4
    for (int g = 0; g < G; g++, at += MV * MMT_VL) {
        MMT_V a0 = MMT_LOAD(at), a1 = MV == 2 ? MMT_LOAD(at + MMT_VL) : a0;
#pragma GCC unroll 16
        for (int r = 0; r < R; r++) {
            MMT_V bb = MMT_SET1(R1 && r >= R1 ? bk2[(r - R1) * S + g] : bk[r * S + g]);
            acc[0][r] = MMT_FMA(a0, bb, acc[0][r]);
            if (MV == 2)
                acc[1][r] = MMT_FMA(a1, bb, acc[1][r]);
        }
    }
}

/* chan_step with B's k rows from bl (the second pixel row ns0 further), bl in a register:
 * the broadcasts then address base + displacement (an indexed operand splits each FMA
 * into two micro-ops on Intel cores). */
MMT_INLINE void MMT_NAME(chan_at)(MMT_V acc[2][MMC_R1], const float **atp, const float *bl,
                                   int64_t ns0, const int MV, const int R, const int S,
                                   const int R1, const int G, const int ROUT) {
    const float *bk = bl, *bk2 = bl + ns0;
    __asm__("" : "+r"(bk));
    if (R1)
        __asm__("" : "+r"(bk2));
    MMT_NAME(chan_step)(acc, atp, bk, bk2, MV, R, S, R1, G, ROUT);
}

/* C rows [0, MV * MMT_VL), columns [j, j + R) (pixels at b + r * S from the k row's
 * offset; with R1 > 0, two pixel rows of R1: pixels r >= R1 at b + x->ns0 +
 * (r - R1) * S) over x->k rows of k; A's transpose at at. The running sums start from tin
 * (MV * R vectors, pixel by pixel: a previous k-chunk's, see chan_rows) when it is not
 * NULL, else from 0 (zero) or C, and end in tout likewise when it is not NULL, else in
 * C (transposed back). */
MMT_INLINE void MMT_NAME(chan_micro)(const MMT_NAME(Args) *x, const float *at, const float *b,
                                      size_t j, bool zero, const float *tin, float *tout,
                                      const int MV, const int R, const int S, const int R1,
                                      const int G, const int ROUT) {
    MMT_V acc[2][MMC_R1], t[MMT_VL];
    MMT_M mr = MMT_LANES(R);
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++) {
        if (tin) {
#pragma GCC unroll 16
            for (int r = 0; r < R; r++)
                acc[v][r] = MMT_LOAD(tin + (size_t)(r * MV + v) * MMT_VL);
            continue;
        }
        if (zero) {
#pragma GCC unroll 16
            for (int r = 0; r < R; r++)
                acc[v][r] = MMT_ZERO();
            continue;
        }
#pragma GCC unroll 16
        for (int i = 0; i < MMT_VL; i++)
            t[i] = MMT_LOADM(mr, x->c + (size_t)(v * MMT_VL + i) * x->ldc + j);
        MMT_TRANSPOSE(t);
#pragma GCC unroll 16
        for (int r = 0; r < R; r++)
            acc[v][r] = t[r];
    }
    /* B's rows, through a pointer stepped from one k step to the next: a plain B's row k
     * at b + k * klin (x->klin, kin 0); a window's k in tap groups (x->kin), the group of
     * channel c and kernel row r at b + c * klin + r * kst. Other windows' rows at b +
     * koff[k], the offset of k row k + G read while rows k to k + G - 1 multiply (read
     * in the same step, the broadcasts waited on it: 16 x 16 x 192 in L1 from 215 to 250
     * GFLOP/s on AMD Zen 5). Even a step ahead, broadcasts whose address comes from a
     * table cost: a plain B of 14-pixel rows ran at 200-205 GFLOP/s that way, 240-250
     * stepped (a micro-benchmark of 16 x 196 x 1024 in L2); mm_tiles, one thread: plain
     * m16 n196 k1024 199-211 -> 207-230 GFLOP/s, resnet50's 3 x 3 and 7 x 7 tiles 2-11%
     * faster. G > 1: k runs in groups of G taps one float apart (a window row of G
     * columns, ks2 1; chan_rows gives whole groups), every broadcast of a group from one
     * base register at a displacement (the same lines: 250 -> 265 GFLOP/s). Still one k
     * after the other. */
    const int64_t ns0 = R1 ? x->ns0 : 0;
    if (x->kin) {            /* a window's channels of kin kernel rows of G taps */
        const float *bl = b;
        const int64_t wrap = x->klin - (int64_t)x->kin * x->kst;
        for (uint32_t k = 0, q = x->kq0; k < x->k; k += G) {
            MMT_NAME(chan_pf)(x, k, G);
            MMT_NAME(chan_at)(acc, &at, bl, ns0, MV, R, S, R1, G, ROUT);
            bl += x->kst;
            if (++q == x->kin)
                q = 0, bl += wrap;
        }
    } else if (x->klin) {
        const float *bl = b;
        for (uint32_t k = 0; k < x->k; k += G, bl += x->klin * G) {
            MMT_NAME(chan_pf)(x, k, G);
            MMT_NAME(chan_at)(acc, &at, bl, ns0, MV, R, S, R1, G, ROUT);
        }
    } else {
        const int32_t *koff = x->koff;
        const uint32_t klast = x->k - G;   /* chan_rows' chunks: whole groups, k >= G */
        const float *bnext = b + koff[0];
        for (uint32_t k = 0; k < x->k; k += G) {
            MMT_NAME(chan_pf)(x, k, G);
            const float *bk = bnext;
            bnext = b + koff[k < klast ? k + G : klast];
            MMT_NAME(chan_at)(acc, &at, bk, ns0, MV, R, S, R1, G, ROUT);
        }
    }
    if (tout) {
#pragma GCC unroll 2
        for (int v = 0; v < MV; v++)
#pragma GCC unroll 16
            for (int r = 0; r < R; r++)
                MMT_STORE(tout + (size_t)(r * MV + v) * MMT_VL, acc[v][r]);
        return;
    }
    _Alignas(64) float tb[2 * MMT_VL * MMT_VL];  /* x->po: C's rows, R pixels each */
    /* a chain of register forms only (x->po->nreg) runs on the transposed rows as they
     * are, a row of C a vector (R lanes), then stored: no staging of C's rows through
     * tb for post_block (resnet50, 2 threads, 16 alternating pairs: -0.28%; its stem
     * alone at one thread 1.005 / 1.009 / 1.006 -> 0.988 / 1.007 / 0.973 ms) */
    const bool preg = x->po && x->po->nreg == x->po->n;
#pragma GCC unroll 2
    for (int v = 0; v < MV; v++) {
#pragma GCC unroll 16
        for (int r = 0; r < MMT_VL; r++)
            t[r] = r < R ? acc[v][r] : MMT_ZERO();
        MMT_TRANSPOSE(t);
        if (preg) {
            MMT_V w[MMT_VL][2];
#pragma GCC unroll 16
            for (int i = 0; i < MMT_VL; i++)
                w[i][0] = t[i];
            MMT_NAME(post_regs_store)(x->po, w, MMT_VL, 1, x->prow + (size_t)v * MMT_VL, j, mr,
                                      mr, x->c + (size_t)(v * MMT_VL) * x->ldc + j, x->ldc);
            continue;
        }
#pragma GCC unroll 16
        for (int i = 0; i < MMT_VL; i++)
            if (x->po)
                MMT_STORE(tb + (size_t)(v * MMT_VL + i) * MMT_VL, t[i]);
            else
                MMT_STOREM(x->c + (size_t)(v * MMT_VL + i) * x->ldc + j, mr, t[i]);
    }
    if (x->po && !preg) /* final: stored through the epilogue's chain (rt_kern_mmp.h) */
        MMT_NAME(post_block)(x->po, tb, MMT_VL, x->c + j, x->ldc, x->prow,
                             (size_t)(MV * MMT_VL), j, (size_t)R);
}

/* One chan_micro function per (vectors, pixel stride, pixels): R a constant, so the
 * accumulators stay in registers; chan_* takes k a row at a time, chant_* in groups of
 * MMC_TAPS taps, chanw_* in groups of MMC_TAPSW, pixels outer (tap_groups). */
#define MMC_TAPS 3
#define MMC_FNG(P, G, MV, S, R)                                                           \
    MMT_TARGET static void MMT_NAME(chan##P##_##MV##_##S##_##R)(                           \
        const MMT_NAME(Args) * x, const float *at, const float *b, size_t j, bool zero,   \
        const float *tin, float *tout) {                                                  \
        MMT_NAME(chan_micro)(x, at, b, j, zero, tin, tout, MV, R, S, 0, G,                \
                             G == MMC_TAPSW);                                             \
    }
#define MMC_FN(MV, S, R) MMC_FNG(, 1, MV, S, R) MMC_FNT_##MV(S, R) MMC_FNW_##MV(S, R)
#define MMC_FNW_1(S, R) MMC_FNG(w, MMC_TAPSW, 1, S, R)
#define MMC_FNW_2(S, R)
#define MMC_FNT_1(S, R) MMC_FNG(t, MMC_TAPS, 1, S, R)
#define MMC_FNT_2(S, R)      /* two vectors: their A loads of a group took registers the
                                accumulators needed (28 of them: spilled, 15% slower) */
#define MMC_FNS(MV, S)                                                                    \
    MMC_FN(MV, S, 1) MMC_FN(MV, S, 2) MMC_FN(MV, S, 3) MMC_FN(MV, S, 4) MMC_FN(MV, S, 5)  \
    MMC_FN(MV, S, 6) MMC_FN(MV, S, 7) MMC_FN(MV, S, 8)
MMC_FNS(1, 1)
MMC_FNS(1, 2)
MMC_FNS(2, 1)
MMC_FNS(2, 2)
#if MMT_VL == 16
#define MMC_FNS16(MV, S)                                                                  \
    MMC_FN(MV, S, 9) MMC_FN(MV, S, 10) MMC_FN(MV, S, 11) MMC_FN(MV, S, 12)                \
    MMC_FN(MV, S, 13) MMC_FN(MV, S, 14)
MMC_FNS16(1, 1)
MMC_FNS16(1, 2)
MMC_FNS16(2, 1)
MMC_FNS16(2, 2)
MMC_FN(1, 1, 15) MMC_FN(1, 1, 16) MMC_FN(1, 2, 15) MMC_FN(1, 2, 16)
#endif

typedef void (*MMT_NAME(ChanFn))(const MMT_NAME(Args) *, const float *, const float *, size_t,
                                 bool, const float *, float *);
#define MMC_ROW(P, MV, S)                                                                 \
    {NULL, MMT_NAME(chan##P##_##MV##_##S##_1), MMT_NAME(chan##P##_##MV##_##S##_2),         \
     MMT_NAME(chan##P##_##MV##_##S##_3), MMT_NAME(chan##P##_##MV##_##S##_4),               \
     MMT_NAME(chan##P##_##MV##_##S##_5), MMT_NAME(chan##P##_##MV##_##S##_6),               \
     MMT_NAME(chan##P##_##MV##_##S##_7), MMT_NAME(chan##P##_##MV##_##S##_8)                \
         MMC_ROW16(P, MV, S)}
#if MMT_VL == 16
#define MMC_ROW16(P, MV, S)                                                               \
    , MMT_NAME(chan##P##_##MV##_##S##_9), MMT_NAME(chan##P##_##MV##_##S##_10),            \
        MMT_NAME(chan##P##_##MV##_##S##_11), MMT_NAME(chan##P##_##MV##_##S##_12),         \
        MMT_NAME(chan##P##_##MV##_##S##_13), MMT_NAME(chan##P##_##MV##_##S##_14)          \
            MMC_ROW16B_##MV(P, S)
#define MMC_ROW16B_1(P, S) , MMT_NAME(chan##P##_1_##S##_15), MMT_NAME(chan##P##_1_##S##_16)
#define MMC_ROW16B_2(P, S)
#else
#define MMC_ROW16(P, MV, S)
#endif
/* [taps a group: 1, MMC_TAPS (one vector; two: 1)][vectors - 1][stride - 1][pixels]:
 * NULL past the register budget */
static const MMT_NAME(ChanFn) MMT_NAME(chans)[3][2][2][MMC_R1 + 1] = {
    {{MMC_ROW(, 1, 1), MMC_ROW(, 1, 2)}, {MMC_ROW(, 2, 1), MMC_ROW(, 2, 2)}},
    {{MMC_ROW(t, 1, 1), MMC_ROW(t, 1, 2)}, {MMC_ROW(, 2, 1), MMC_ROW(, 2, 2)}},
    {{MMC_ROW(w, 1, 1), MMC_ROW(w, 1, 2)}, {MMC_ROW(, 2, 1), MMC_ROW(, 2, 2)}}};

/* One chan_micro function per (vectors, pixel stride, pixels a row) for two pixel rows
 * a call: a row of R1 pixels alone is R1 FMA chains a vector, too few to hide the
 * FMA's latency (resnet50's 7 x 7 convolutions, R1 = 7: about 1.2x faster in pairs). */
#define MMC_FN2G(P, G, MV, S, R1)                                                         \
    MMT_TARGET static void MMT_NAME(chan2##P##_##MV##_##S##_##R1)(                         \
        const MMT_NAME(Args) * x, const float *at, const float *b, size_t j, bool zero,   \
        const float *tin, float *tout) {                                                  \
        MMT_NAME(chan_micro)(x, at, b, j, zero, tin, tout, MV, 2 * R1, S, R1, G, 0);      \
    }
#define MMC_FN2(MV, S, R1) MMC_FN2G(, 1, MV, S, R1) MMC_FN2T_##MV(S, R1)
#define MMC_FN2T_1(S, R1) MMC_FN2G(t, MMC_TAPS, 1, S, R1)
#define MMC_FN2T_2(S, R1)
#define MMC_FN2S(MV, S) MMC_FN2(MV, S, 2) MMC_FN2(MV, S, 3) MMC_FN2(MV, S, 4)
MMC_FN2S(1, 1)
MMC_FN2S(1, 2)
#if MMT_VL == 16
#define MMC_FN2S16(MV, S) MMC_FN2(MV, S, 5) MMC_FN2(MV, S, 6) MMC_FN2(MV, S, 7)
MMC_FN2S(2, 1)
MMC_FN2S(2, 2)
MMC_FN2S16(1, 1)
MMC_FN2S16(1, 2)
MMC_FN2S16(2, 1)
MMC_FN2S16(2, 2)
MMC_FN2(1, 1, 8) MMC_FN2(1, 2, 8)
#define MMC_ROW2(P, MV, S)                                                                \
    {NULL, NULL, MMT_NAME(chan2##P##_##MV##_##S##_2), MMT_NAME(chan2##P##_##MV##_##S##_3), \
     MMT_NAME(chan2##P##_##MV##_##S##_4), MMT_NAME(chan2##P##_##MV##_##S##_5),             \
     MMT_NAME(chan2##P##_##MV##_##S##_6),                                                 \
     MMT_NAME(chan2##P##_##MV##_##S##_7) MMC_ROW2B_##MV(P, S)}
#define MMC_ROW2B_1(P, S) , MMT_NAME(chan2##P##_1_##S##_8)
#define MMC_ROW2B_2(P, S)
#else /* two rows of R1 in MMC_R1 (one vector) or MMC_R2 (two) accumulators */
#define MMC_ROW2(P, MV, S) MMC_ROW2_##MV(P, S)
#define MMC_ROW2_1(P, S)                                                                  \
    {NULL, NULL, MMT_NAME(chan2##P##_1_##S##_2), MMT_NAME(chan2##P##_1_##S##_3),           \
     MMT_NAME(chan2##P##_1_##S##_4)}
#define MMC_ROW2_2(P, S) {NULL}
#endif
/* [taps a group: 1, MMC_TAPS][vectors - 1][stride - 1][pixels a row]: NULL where two
 * rows take too many registers */
static const MMT_NAME(ChanFn) MMT_NAME(chan2s)[3][2][2][MMC_R1 / 2 + 1] = {
    {{MMC_ROW2(, 1, 1), MMC_ROW2(, 1, 2)}, {MMC_ROW2(, 2, 1), MMC_ROW2(, 2, 2)}},
    {{MMC_ROW2(t, 1, 1), MMC_ROW2(t, 1, 2)}, {MMC_ROW2(, 2, 1), MMC_ROW2(, 2, 2)}},
    {{{NULL}, {NULL}}, {{NULL}, {NULL}}}};  /* wide groups: a row at a time */

/* Bytes of A's transpose a k-chunk of chan_rows takes: with the window rows it
 * multiplies, it stays in the L1 cache while every pixel block runs over it. With one
 * vector of rows (MMC_CHUNK_BYTES1: a chunk is then half as many bytes a k) the chunks
 * are larger: resnet50's 3 x 3 convolutions of 16 channels a core took their k in 2, 3,
 * 6 and 12 chunks by stage, not 3, 5, 9 and 18, each chunk a pass of the running sums
 * through the packing buffer; the whole model 0.5% faster at 2 threads (30 alternating
 * pairs, 26 faster; 20, 24 and 28 KiB alike, 8 KiB slower) and 0.8% at one. Two
 * vectors' chunks larger or smaller: no gain (32, 48 KiB) or slower (8, 12 KiB). */
#define MMC_CHUNK_BYTES (16u << 10)
#if MMT_VL == 16
#define MMC_CHUNK_BYTES1 (24u << 10)
#else
#define MMC_CHUNK_BYTES1 MMC_CHUNK_BYTES /* AVX2 hosts: not measured, kept */
#endif

/* The tap groups window x's k runs in (the first index of chans): 1, groups of
 * MMC_TAPS taps (the chant_* functions), or 2, groups of MMC_TAPSW (chanw_*), when its
 * rows are of that many columns one float apart (a 3 x 3 or 7 x 7 convolution's), so
 * that every group starts at a multiple of it and its offsets are one float apart; else
 * 0, a k row at a time. */
MMT_INLINE int MMT_NAME(tap_groups)(const MMT_NAME(Args) *x) {
    if (!x->win || x->ks2 != 1)
        return 0;
    if (x->ke2 == MMC_TAPS && x->k % MMC_TAPS == 0)
        return 1;
    return x->ke2 == MMC_TAPSW && x->k % MMC_TAPSW == 0 ? 2 : 0;
}

/* Gives y's next chan_micro call the next step lines of tab, or of the lines one after
 * the other from line (when not NULL; npf of them, done so far taken). */
MMT_INLINE void MMT_NAME(chan_pf_next)(MMT_NAME(Args) *y, const char **tab, const char *line,
                                        uint32_t npf, uint32_t step, uint32_t *done) {
    y->pfp = tab + *done;
    y->pfc = line ? line + (size_t)*done * 64 : NULL;
    y->pfpn = npf - *done < step ? npf - *done : step;
    *done += y->pfpn;
}

/* C's columns as ne0 rows of ne1 pixels (pixel (r, j) of B at b + r * ns0 + j * S from
 * the k row's offset koff[k]) by chan_micro, each row in blocks of equal size; A's
 * transpose at at, packed a k-chunk at a time (chan_pack_a) just before the chunk's
 * blocks run, while those blocks prefetch the next chunk's A (chan_pf_lines; after the
 * last chunk, the first of rows na of A, the next group's, when na is not NULL). With
 * ct (room for n pixels' MV vectors), k runs in equal chunks of at most
 * MMC_CHUNK_BYTES (one vector: MMC_CHUNK_BYTES1) of at, every block over one chunk
 * before the next, the running sums kept in ct between chunks (exact): over all of k
 * at once, a block read at and the window from L2 (resnet50's 3 x 3 convolutions: k
 * 576 to 4608), at about the L2's bandwidth. With A's kept transpose pre (its end
 * pend), the chunks are read there, none packed, and the calls prefetch MMC_PF_AHEAD
 * chunks ahead instead (past pend, the next copy's start, x->pnx). */
MMT_INLINE void MMT_NAME(chan_rows)(const MMT_NAME(Args) *x, float *at, float *ct, int mv,
                                     int s, size_t ne0, size_t ne1, int64_t ns0,
                                     const rt_f32 *na, uint32_t nrows, const float *pre,
                                     const float *pend) {
    size_t rmax = mv == 1 ? MMC_R1 : MMC_R2, nb = (ne1 + rmax - 1) / rmax;
    uint32_t cb = mv == 1 ? MMC_CHUNK_BYTES1 : MMC_CHUNK_BYTES;
    uint32_t kmax = ct ? cb / (uint32_t)(mv * MMT_VL * 4) : x->k;
    uint32_t nch = (x->k + kmax - 1) / kmax, kch = (x->k + nch - 1) / nch;
    int tg = mv == 1 ? MMT_NAME(tap_groups)(x) : 0;   /* chunks of whole tap groups */
    uint32_t gsz = tg == 2 ? MMC_TAPSW : tg ? MMC_TAPS : 1;
    kch = (kch + gsz - 1) / gsz * gsz;
    MMT_NAME(ChanFn) pair = ne1 <= MMC_R1 / 2 ? MMT_NAME(chan2s)[tg][mv - 1][s - 1][ne1] : NULL;
    size_t calls = pair ? ne0 / 2 + ne0 % 2 * nb : ne0 * nb;   /* chan_micro calls a chunk */
    const char *tab[MMC_PF_MAX];
    MMT_NAME(Args) y = *x;
    for (uint32_t k0 = 0; k0 < x->k; k0 += kch) {
        y.k = x->k - k0 < kch ? x->k - k0 : kch;
        y.koff = x->koff ? x->koff + k0 : NULL;
        const float *bc = x->b;   /* klin: the chunk's first row */
        if (x->kin) {
            uint32_t g0 = k0 / gsz;
            y.kq0 = g0 % x->kin;
            bc += (int64_t)(g0 / x->kin) * x->klin + (int64_t)y.kq0 * x->kst;
        } else {
            bc += (int64_t)k0 * x->klin;
        }
        bool first = k0 == 0, last = k0 + y.k == x->k;
        y.po = last && MMT_NAME(has_post)(x) ? x->epi->post : NULL; /* tiles final */
        const float *atk = (pre ? pre : at) + (size_t)k0 * mv * MMT_VL;
        uint32_t npf;
        const char *line = NULL;
        if (pre) {   /* the kept transpose MMC_PF_AHEAD chunks ahead, to its end, then
                      * the start of the copy read after it (x->pnx): their lines one
                      * after the other, from y.pfc (no table to fill). Without the
                      * next copy's start, each program's first chunk came from DRAM
                      * (resnet50, 2 threads: 1.2% slower) */
            const float *pf = atk + (size_t)MMC_PF_AHEAD * kch * mv * MMT_VL;
            size_t left = pf < pend ? (size_t)(pend - pf) : 0, want = (size_t)kch * mv * MMT_VL;
            if (!left && x->pnx)   /* past the end: the start of the copy read next */
                pf = x->pnx, left = x->pnxn;
            size_t len = left < want ? left : want;
            uintptr_t lo = (uintptr_t)pf & ~(uintptr_t)63, hi = (uintptr_t)(pf + len);
            npf = len ? (uint32_t)((hi - lo + 63) / 64) : 0;
            npf = npf < MMC_PF_MAX ? npf : MMC_PF_MAX;
            line = npf ? (const char *)lo : NULL;
        } else {
            npf = last ? MMT_NAME(chan_pf_lines)(x, tab, na, nrows, 0, x->k < kch ? x->k : kch)
                       : MMT_NAME(chan_pf_lines)(x, tab, x->a, (uint32_t)mv * MMT_VL, k0 + kch,
                                                x->k - (k0 + kch) < kch ? x->k - (k0 + kch)
                                                                        : kch);
        }
        uint32_t step = (uint32_t)((npf + calls - 1) / calls), done = 0;
        step = step < y.k ? step : y.k;
        if (!pre)
            MMT_NAME(chan_pack_a)(x, at, mv, k0, k0 + y.k);
        size_t r0 = 0;
        for (; pair && r0 + 1 < ne0; r0 += 2) {   /* whole rows, two a call */
            float *t = first && last ? NULL : ct + r0 * ne1 * mv * MMT_VL;
            MMT_NAME(chan_pf_next)(&y, tab, line, npf, step, &done);
            pair(&y, atk, bc + (int64_t)r0 * ns0, r0 * ne1, x->zero, first ? NULL : t,
                 last ? NULL : t);
        }
        for (; r0 < ne0; r0++)
            for (size_t j = 0, q = 0; q < nb; q++) {
                size_t w = (ne1 - j + (nb - q) - 1) / (nb - q), p = r0 * ne1 + j;
                float *t = first && last ? NULL : ct + p * mv * MMT_VL;
                MMT_NAME(chan_pf_next)(&y, tab, line, npf, step, &done);
                MMT_NAME(chans)[tg][mv - 1][s - 1][w](&y, atk,
                                                  bc + (int64_t)r0 * ns0 + (int64_t)j * s, p,
                                                  x->zero, first ? NULL : t, last ? NULL : t);
                j += w;
            }
        for (; done < npf; done++)    /* more lines than the calls took */
            __builtin_prefetch(line ? line + (size_t)done * 64 : tab[done], 0, 2);
    }
}

/* Whether chan_groups takes a product of m rows and k: a multiple of a vector's worth
 * of rows, at most vmax vectors, and a group's A transpose and the k offsets in the
 * packing buffer (the transpose at kb bytes). */
MMT_INLINE bool MMT_NAME(chan_fits)(const RtCore *c, uint32_t m, uint32_t k, uint32_t vmax,
                                     size_t *kb) {
    uint32_t g = m < 2 * MMT_VL ? m : 2 * MMT_VL;
    *kb = ((size_t)k * 4 + 63) & ~(size_t)63;
    return c->pack && m % MMT_VL == 0 && m / MMT_VL >= 1 && m / MMT_VL <= vmax && k > 0 &&
           *kb + (size_t)k * g * 4 <= RT_PACK_BYTES;
}

/* A's transpose kept for the session (rt_apre.c) when A is a constant (aconst): group
 * after group of two vectors' worth of rows (the last one or two), each k rows of
 * MV * MMT_VL floats (chan_rows' at, all of k), group g0 at the result + g0 * k; made
 * here the first time. NULL: none (A may change, no room, or another thread is making
 * it): chan_rows transposes a chunk at a time. Sets x->pnx to the copy this thread
 * read after this one the last time (rt_apre_take_on), for chan_rows to prefetch. */
MMT_INLINE const float *MMT_NAME(chan_pre)(RtCore *c, MMT_NAME(Args) *x, bool aconst) {
    if (!aconst || !c->apre)
        return NULL;
    RtAKey key = {x->a, x->lda, x->m, x->k, RT_APRE_CHAN | MMT_VL};
    bool fill;
    size_t nb;
    float *t = rt_apre_take_on(c->apre, &c->atrail, &key, (size_t)x->m * x->k * 4, &fill,
                               &x->pnx, &nb);
    x->pnxn = nb / 4;
    if (!fill)
        return t;
    for (uint32_t g0 = 0; g0 < x->m; g0 += 2 * MMT_VL) {
        MMT_NAME(Args) y = *x;
        y.a = x->a + (size_t)g0 * x->lda;
        MMT_NAME(chan_pack_a)(&y, t + (size_t)g0 * x->k, x->m - g0 >= 2 * MMT_VL ? 2 : 1, 0,
                              x->k);
    }
    rt_apre_filled(c->apre, &key);
    return t;
}

/* All of C by chan_rows (pixel rows as there), in groups of two vectors' worth of rows
 * (the last one or two), each group's A transposed into at as it goes (room floats
 * from at on: past the transpose, chan_rows' running sums where they fit) or read
 * from A's kept transpose pre (chan_pre), the next group's first k-chunk prefetched
 * during the last chunk of this one. */
MMT_INLINE void MMT_NAME(chan_groups)(const MMT_NAME(Args) *x, float *at, size_t room, int s,
                                       size_t ne0, size_t ne1, int64_t ns0, const float *pre) {
    size_t g = x->m < 2 * MMT_VL ? x->m : 2 * MMT_VL;
    float *ct = (size_t)x->k * g + (size_t)x->n * g <= room ? at + (size_t)x->k * g : NULL;
    for (uint32_t g0 = 0; g0 < x->m; g0 += 2 * MMT_VL) {
        MMT_NAME(Args) y = *x;
        int mv = x->m - g0 >= 2 * MMT_VL ? 2 : 1;
        y.a = x->a + (size_t)g0 * x->lda;
        y.c = x->c + (size_t)g0 * x->ldc;
        y.m = (uint32_t)mv * MMT_VL;
        y.prow = x->prow + g0;
        uint32_t g1 = g0 + (uint32_t)mv * MMT_VL;
        uint32_t nrows = x->m - g1 < 2 * MMT_VL ? x->m - g1 : 2 * MMT_VL;
        MMT_NAME(chan_rows)(&y, at, ct, mv, s, ne0, ne1, ns0,
                            g1 < x->m ? x->a + (size_t)g1 * x->lda : NULL, nrows,
                            pre ? pre + (size_t)g0 * x->k : NULL,
                            pre ? pre + (size_t)x->m * x->k : NULL);
        if (!MMT_NAME(has_post)(x))              /* else stored through it (chan_micro) */
            MMT_NAME(epi)(x, g0, y.m, 0, x->n);  /* the group's rows are final */
    }
}

/* A window's MATMUL with channels in the lanes (see the top of the file): taken when C
 * has up to MMC_WIN_V vectors' worth of rows (past them, the packed blocks' panels
 * serve enough rows each) and its pixel rows have column stride 1 or 2 and are at
 * least 2 pixels wide; A's transpose kept when A is a constant (aconst). False: not
 * this way. */
MMT_TARGET static bool MMT_NAME(win_chan)(RtCore *c, MMT_NAME(Args) *x, bool aconst) {
    size_t kb, ne1 = x->ne1;
    if (!MMT_NAME(chan_fits)(c, x->m, x->k, MMC_WIN_V, &kb) || (x->ns1 != 1 && x->ns1 != 2) ||
        ne1 < 2)
        return false;
    if (x->ke1 == 1 && x->ke2 == 1) {          /* a 1 x 1 window: row k at b + k * ks0 */
        x->koff = NULL, x->klin = x->ks0;
    } else if (x->m <= MMT_VL && MMT_NAME(tap_groups)(x)) {  /* groups of ke2 taps */
        x->koff = NULL, x->klin = x->ks0, x->kst = x->ks1, x->kin = x->ke1;
    } else {
        x->koff = MMT_NAME(win_koff)(c, x);
    }
    MMT_NAME(chan_groups)(x, (float *)((uint8_t *)c->pack + kb), (RT_PACK_BYTES - kb) / 4,
                          (int)x->ns1, x->n / ne1, ne1, x->ns0, MMT_NAME(chan_pre)(c, x, aconst));
    return true;
}

#define MMC_PLAIN_L2 (256u << 10) /* bytes of a B that stays in L2 over all groups */
#define MMC_PLAIN_ACT (1u << 20)  /* bytes of an activation B read by every group */
#define MMC_PLAIN_K 256           /* k from which more than two vectors' worth of rows
                                     pay for their transposes (mm_tiles, resnet50's
                                     1 x 1 convolutions: m64 n49 k512 -17%, m64 n196
                                     k256 -11%; m128 k64 and k128: slower) */

/* A plain MATMUL (B in place, not transposed) with channels in the lanes: its n
 * columns as one row of pixels, B's row k at k * ldb. Taken for one or two vectors'
 * worth of rows of C when B is in LX (bdram false), or when all of B fits in L2
 * (MMC_PLAIN_L2, wherever it is) and n is not a multiple of MMT_NR (the pixel-lane
 * kernels' last column block would be partly empty: resnet50's 49, 112 and 196), then
 * also for up to MMC_PLAIN_V vectors when k is at least MMC_PLAIN_K. Never when n is a
 * multiple of MMT_NR: the pixel-lane kernels then fill every lane too, without
 * transposing A first (m16 n32 k128 with B in LX: 2.19 -> 1.63 us, m8 n16 k128 0.69 ->
 * 0.45 us on AMD Zen 3, one thread; m8 to m16 by n 16 to 96: 1.1x to 2x faster, none
 * slower). This kernel reads B column block after column block, each over all of k,
 * so a larger B streamed from DRAM (a weight: bert's 32-row products) comes a strided
 * line at a time, at a third of the speed of the other kernels. An activation from the
 * arena (bconst false: the previous kernel's result, in the host's caches) is taken
 * at any size for one group of rows (B read once): resnet50's 1 x 1 convolutions of
 * 16 output channels a core over 196 or 49 pixels and k 1024 or 2048 (2 threads, median
 * of 20: 48.8 / 49.1 -> 47.5 / 47.3 ms a resnet50 inference; their kernels 12-22%
 * faster at 1 thread, spyrun --profile). Up to MMC_PLAIN_V vectors' worth of rows take
 * an activation of up to MMC_PLAIN_ACT bytes (in L2, read once a group) when k is at
 * least MMC_PLAIN_K: 1 x 1 convolutions of 64 output channels a core over 49 pixels
 * and k 2048 (a chain of eight 2048-channel ones on a 7 x 7 map, 2 threads: 26.2 ->
 * 20.5 ms; 512 channels on 28 x 28: 19.5 -> 17.4 ms).
 * False: not this way. */
MMT_TARGET static bool MMT_NAME(plain_chan)(RtCore *c, MMT_NAME(Args) *x, bool bdram,
                                            bool bconst, bool aconst) {
    size_t kb;
    bool small = (uint64_t)x->n * x->k * 4 <= MMC_PLAIN_L2 && x->n % MMT_NR;
    bool once = !bconst && x->m <= 2 * MMT_VL;   /* one group: B read once, not a weight */
    bool act = !bconst && (uint64_t)x->n * x->k * 4 <= MMC_PLAIN_ACT; /* in L2 */
    uint32_t vmax = (small || act) && x->k >= MMC_PLAIN_K ? MMC_PLAIN_V : 2;
    if (x->win || x->bt || (bdram && !small && !once && !act) || x->n < 2 ||
        x->n % MMT_NR == 0 || !MMT_NAME(chan_fits)(c, x->m, x->k, vmax, &kb))
        return false;
    x->koff = NULL;
    x->klin = (int64_t)x->ldb;   /* B's row k at b + k * ldb: no table (chan_micro) */
    MMT_NAME(chan_groups)(x, (float *)((uint8_t *)c->pack + kb), (RT_PACK_BYTES - kb) / 4, 1, 1,
                          x->n, 0, MMT_NAME(chan_pre)(c, x, aconst));
    return true;
}
