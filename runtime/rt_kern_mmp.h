/* rt_kern_mmp.h: a MATMUL's epilogue chain in its post form (RtPost, rt_fuse.c) run by
 * the vector kernels on each tile of C as they store it, final, included by
 * rt_kern_mmt.h (its MMT_* parameters in scope).
 *
 * RtEpi.tile runs the chain over a row block of C (the packed kernel) or a group of 32
 * channels (the channel-lane kernels) once all of it is final: a generic interpreter,
 * 64 floats at a time through every VEC, reading back C that the kernel stored to
 * DRAM a moment before (a line still arriving cannot forward a masked store to a
 * load, which waits), on rows that may have left the L1 cache (a group of a 56 x 56
 * map is 400 KiB). Here the packed kernel's micro-kernel calls (MMT_MR rows of up to
 * two vectors) and chan_micro (two vectors' worth of channel rows of up to one)
 * stage their accumulators on the stack and post_block takes them four rows at a time
 * into registers, through the chain's leading operations that have a register form
 * (RT_PR_*: bias, residual, scale, activation, clip), the rest an operation at a time
 * over the tile in L1 (post_tile), and stores them to C once. resnet50's 1 x 1
 * convolutions of k 64 with a bias, residual and RELU: about 0.9 of their time.
 *
 * The same IEEE operation per element, in the chain's order, with the chain value at
 * the same operand position as in rt_fuse.c's chain_row (MAX and MIN: the first
 * operand when it is better or NaN; RELU keeps a NaN and -0): the same bits.
 */

/* An integer vector as wide as MMT_V, for the selects (GCC / clang vector extensions:
 * a comparison of two MMT_V gives one of these, all ones where true). */
typedef int32_t MMT_NAME(PI) __attribute__((vector_size(sizeof(MMT_V))));

/* The bits of a where m is set, else those of b. */
#define MMP_SEL(m, a, b)                                                                   \
    ((MMT_V)(((m) & (MMT_NAME(PI))(a)) | (~(m) & (MMT_NAME(PI))(b))))

/* fn(p, q) for a binary function of the chain (p its first operand). */
MMT_INLINE MMT_V MMT_NAME(post_bin)(int fn, MMT_V p, MMT_V q) {
    switch (fn) {
    case ISA_VF_ADD: return p + q;
    case ISA_VF_SUB: return p - q;
    case ISA_VF_MUL: return p * q;
    case ISA_VF_DIV: return p / q;
    case ISA_VF_MAX: return MMP_SEL((p > q) | (p != p), p, q);
    default: return MMP_SEL((p < q) | (p != p), p, q);    /* MIN */
    }
}

/* x through function fn of a chain with the chain value at operand position pos, y
 * the other operand (binary functions). */
MMT_INLINE MMT_V MMT_NAME(post_fn)(int fn, int pos, MMT_V x, MMT_V y) {
    switch (fn) {
    case ISA_VF_RELU: return MMP_SEL(x < MMT_ZERO(), MMT_ZERO(), x);
    case ISA_VF_NEG: return -x;
    case ISA_VF_ABS: return (MMT_V)((MMT_NAME(PI))x & 0x7fffffff);
    default: return pos ? MMT_NAME(post_bin)(fn, y, x) : MMT_NAME(post_bin)(fn, x, y);
    }
}

/* One operation o of a chain (function fn, position pos, operand kind: constants
 * where inlined, so the loop has no branch) over rows x cols of the tile at tb (rows
 * tbs floats apart, whole vectors), in place, or into dst (rows ldc apart, the
 * columns past cols untouched) when dst is not NULL; i0 and j0 the tile's first row
 * and column as the operands'. */
MMT_INLINE void MMT_NAME(post_pass)(const RtPostOp *o, float *tb, size_t tbs, float *dst,
                                     size_t ldc, size_t i0, size_t rows, size_t j0,
                                     size_t cols, const int fn, const int pos,
                                     const int kind) {
    for (size_t r = 0; r < rows; r++) {
        const uint8_t *yr = o->y + (int64_t)(i0 + r) * o->yrs;
        MMT_V y = MMT_SET1(o->imm);
        if (kind == RT_PO_SCALAR) {
            float v;
            memcpy(&v, yr, 4);
            y = MMT_SET1(v);
        }
        for (size_t j = 0; j < cols; j += MMT_VL) {
            MMT_M m = MMT_LANES((int64_t)(cols - j));
            if (kind == RT_PO_ROW)
                y = MMT_LOADM(m, (const float *)yr + j0 + j);
            MMT_V x = MMT_NAME(post_fn)(fn, pos, MMT_LOAD(tb + r * tbs + j), y);
            if (dst)
                MMT_STOREM(dst + r * ldc + j, m, x);
            else
                MMT_STORE(tb + r * tbs + j, x);
        }
    }
}

/* post_pass for the binary function FN with each operand position and kind. */
#define MMP_BIN(FN)                                                                       \
    case FN:                                                                              \
        if (o->kind == RT_PO_ROW && o->pos)                                               \
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, FN, 1, RT_PO_ROW); \
        else if (o->kind == RT_PO_ROW)                                                    \
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, FN, 0, RT_PO_ROW); \
        else if (o->pos)                                                                  \
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, FN, 1,            \
                                RT_PO_SCALAR);                                            \
        else                                                                              \
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, FN, 0,            \
                                RT_PO_SCALAR);                                            \
        break;

/* Runs operations [q0, po->n) of the chain po over a tile of rows x cols of C at tb
 * (rows tbs floats apart, whole vectors: a micro-kernel call's accumulators, stored to
 * the stack), an operation at a time over the tile (in the L1 cache), the last writing
 * the results to dst (rows ldc floats apart: C in DRAM, not read back there: a masked
 * store's line still on its way from memory cannot forward to a load, which then
 * waits for it). i0 and j0: the tile's first row and column as a row and column of
 * the chain's operands. */
MMT_TARGET static void MMT_NAME(post_tile)(const RtPost *po, int q0, float *tb, size_t tbs,
                                           float *dst, size_t ldc, size_t i0, size_t rows,
                                           size_t j0, size_t cols) {
    for (int q = q0; q < po->n; q++) {
        const RtPostOp *o = &po->op[q];
        float *d = q == po->n - 1 ? dst : NULL;
        switch (o->fn) {
        MMP_BIN(ISA_VF_ADD)
        MMP_BIN(ISA_VF_SUB)
        MMP_BIN(ISA_VF_MUL)
        MMP_BIN(ISA_VF_DIV)
        MMP_BIN(ISA_VF_MAX)
        MMP_BIN(ISA_VF_MIN)
        case ISA_VF_RELU:
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, ISA_VF_RELU, 0, 0);
            break;
        case ISA_VF_NEG:
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, ISA_VF_NEG, 0, 0);
            break;
        default:
            MMT_NAME(post_pass)(o, tb, tbs, d, ldc, i0, rows, j0, cols, ISA_VF_ABS, 0, 0);
            break;
        }
    }
}
#undef MMP_BIN

/* Row r's operand of o (RT_PR_*_S: its scalar, broadcast). */
#define MMP_S(o, r) MMT_SET1(*(const float *)((o)->y + (int64_t)(i0 + (r)) * (o)->yrs))
/* Vector t of row r's operand row (RT_PR_*_R), lanes m. */
#define MMP_R(o, r, t, m)                                                                 \
    MMT_LOADM(m, (const float *)((o)->y + (int64_t)(i0 + (r)) * (o)->yrs) + j0 + (t) * MMT_VL)
/* v[r][t] = EXPR of X (the chain value) and Y for every row and vector. */
#define MMP_EACH(YEXPR, EXPR)                                                             \
    _Pragma("GCC unroll 16") for (int r = 0; r < R; r++)                                  \
        _Pragma("GCC unroll 2") for (int t = 0; t < NV; t++) {                            \
            MMT_V X = v[r][t], Y = YEXPR;                                                 \
            (void)Y;                                                                      \
            v[r][t] = (EXPR);                                                             \
        }

/* Runs operations [0, po->nreg) of the chain po (a register form each, RT_PR_*) on
 * rows v of a tile (R rows, NV vectors: C's rows i0.. and columns j0.. as the
 * operands' rows and columns, lanes m0 and m1). The same expressions as post_fn: the
 * same bits. */
MMT_INLINE void MMT_NAME(post_regs)(const RtPost *po, MMT_V (*v)[2], const int R, const int NV,
                                     size_t i0, size_t j0, MMT_M m0, MMT_M m1) {
    for (int q = 0; q < po->nreg; q++) {
        const RtPostOp *o = &po->op[q];
        switch (o->reg) {
        case RT_PR_ADD_S: MMP_EACH(MMP_S(o, r), o->pos ? Y + X : X + Y) break;
        case RT_PR_ADD_R: MMP_EACH(MMP_R(o, r, t, t ? m1 : m0), o->pos ? Y + X : X + Y) break;
        case RT_PR_MUL_S: MMP_EACH(MMP_S(o, r), o->pos ? Y * X : X * Y) break;
        case RT_PR_MUL_R: MMP_EACH(MMP_R(o, r, t, t ? m1 : m0), o->pos ? Y * X : X * Y) break;
        case RT_PR_MAX_S:
            MMP_EACH(MMP_S(o, r), o->pos ? MMT_NAME(post_bin)(ISA_VF_MAX, Y, X)
                                         : MMT_NAME(post_bin)(ISA_VF_MAX, X, Y))
            break;
        case RT_PR_MIN_S:
            MMP_EACH(MMP_S(o, r), o->pos ? MMT_NAME(post_bin)(ISA_VF_MIN, Y, X)
                                         : MMT_NAME(post_bin)(ISA_VF_MIN, X, Y))
            break;
        default: MMP_EACH(MMT_ZERO(), MMT_NAME(post_fn)(ISA_VF_RELU, 0, X, Y)) break;
        }
    }
}

/* Rows [r0, r0 + R) of a tile at tb through the chain po (post_block), NV vectors a row. */
MMT_INLINE void MMT_NAME(post_rows)(const RtPost *po, float *tb, size_t tbs, float *dst,
                                     size_t ldc, size_t i0, size_t r0, size_t j0, size_t cols,
                                     MMT_M m0, MMT_M m1, const int R, const int NV) {
    MMT_V v[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 2
        for (int t = 0; t < NV; t++)
            v[r][t] = MMT_LOAD(tb + (r0 + r) * tbs + t * MMT_VL);
    MMT_NAME(post_regs)(po, v, R, NV, i0 + r0, j0, m0, m1);
    if (po->nreg < po->n) {       /* the rest an operation at a time (post_tile) */
#pragma GCC unroll 4
        for (int r = 0; r < R; r++)
#pragma GCC unroll 2
            for (int t = 0; t < NV; t++)
                MMT_STORE(tb + (r0 + r) * tbs + t * MMT_VL, v[r][t]);
        MMT_NAME(post_tile)(po, po->nreg, tb + r0 * tbs, tbs, dst + r0 * ldc, ldc, i0 + r0,
                            (size_t)R, j0, cols);
        return;
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++) {
        MMT_STOREM(dst + (r0 + r) * ldc, m0, v[r][0]);
        if (NV == 2)
            MMT_STOREM(dst + (r0 + r) * ldc + MMT_VL, m1, v[r][1]);
    }
}

/* Stores a tile of rows x cols (cols <= 2 vectors) of C, final, through the epilogue's
 * chain po: its values at tb (rows tbs floats apart, whole vectors: a micro-kernel
 * call's accumulators, stored to the stack where they are loaded again at once), the
 * results to dst (rows ldc floats apart, C in DRAM, not read there). Four rows at a
 * time in registers through the operations that have a register form, then the rest
 * (post_tile): a bias, residual and activation cost a few instructions a vector of C
 * instead of a pass over C of their own (resnet50's 1 x 1 convolutions of k 64: about
 * a tenth of their time). i0 and j0: the tile's first row and column as the operands'. */
MMT_TARGET static void MMT_NAME(post_block)(const RtPost *po, float *tb, size_t tbs,
                                            float *dst, size_t ldc, size_t i0, size_t rows,
                                            size_t j0, size_t cols) {
    MMT_M m0 = MMT_LANES((int64_t)cols), m1 = MMT_LANES((int64_t)cols - MMT_VL);
    size_t r = 0;
    if (cols > MMT_VL) {
        for (; r + 4 <= rows; r += 4)
            MMT_NAME(post_rows)(po, tb, tbs, dst, ldc, i0, r, j0, cols, m0, m1, 4, 2);
        for (; r < rows; r++)
            MMT_NAME(post_rows)(po, tb, tbs, dst, ldc, i0, r, j0, cols, m0, m1, 1, 2);
    } else {
        for (; r + 4 <= rows; r += 4)
            MMT_NAME(post_rows)(po, tb, tbs, dst, ldc, i0, r, j0, cols, m0, m1, 4, 1);
        for (; r < rows; r++)
            MMT_NAME(post_rows)(po, tb, tbs, dst, ldc, i0, r, j0, cols, m0, m1, 1, 1);
    }
}
#undef MMP_S
#undef MMP_R
#undef MMP_EACH

/* Rows v of a final tile (R rows, NV vectors: C's rows i0.. and columns j0.. as the
 * operands', lanes m0 and m1) through a chain of register forms only (po->nreg ==
 * po->n), stored to dst (rows ldc floats apart): the kernels' way past post_block's
 * staging (the packed blocks, chan_micro, rows8). */
MMT_INLINE void MMT_NAME(post_regs_store)(const RtPost *po, MMT_V (*v)[2], const int R,
                                           const int NV, size_t i0, size_t j0, MMT_M m0,
                                           MMT_M m1, float *dst, size_t ldc) {
    MMT_NAME(post_regs)(po, v, R, NV, i0, j0, m0, m1);
#pragma GCC unroll 16
    for (int r = 0; r < R; r++) {
        MMT_STOREM(dst + r * ldc, m0, v[r][0]);
        if (NV == 2)
            MMT_STOREM(dst + r * ldc + MMT_VL, m1, v[r][1]);
    }
}

/* Whether x's epilogue has a post form: the kernels that store their final tiles
 * through it (MMT_NAME(Args).po) then leave out MMT_NAME(epi). */
MMT_INLINE bool MMT_NAME(has_post)(const MMT_NAME(Args) *x) {
    return x->epi && x->epi->post;
}
