/* rt_kern_mmn.h: a plain F32 MATMUL with few columns of C (at most MMT_GEMV_M: a 1 x 1
 * convolution on a 1- to 4-pixel map, a classifier computed as W x, a dynamic bundle's
 * image in a larger size bucket), included by rt_kern_mmt.h (its MMT_* parameters,
 * MMT_NAME(Args) and rt_kern_mmv.h's gemv_t functions in scope).
 *
 * The pixel-lane kernels fill 1 to 4 of a vector's lanes with such a product, and the
 * channel-lane kernel (rt_kern_mmc.h) transposes all of A first for a handful of
 * multiply-adds per element (or is not taken at n = 1): mobilenet_v2's last 1 x 1
 * convolution at a 32 x 32 input ran at 5 to 6 GFLOP/s. Transposed, C^T = B^T A^T is a
 * product of at most MMT_GEMV_M rows with its B (here A) given transposed: the decode
 * step's gemv_t, which reads A's rows MMT_VL at a time and transposes them in
 * registers, every lane useful; the rows of B^T are B's columns, read in place with
 * B's row stride. C^T (n rows of m) goes through the packing buffer unless it is C
 * itself (n = 1, unit row stride). Every element of C still accumulates a_ik * b_kj in
 * increasing k from 0 or the old C, one fused multiply-add each (fma(a, b, c) =
 * fma(b, a, c)): the bits of the other kernels.
 */

/* Whether narrow takes plain product x: at most MMT_GEMV_M columns, at least a vector
 * of rows, and C^T fits the packing buffer. */
MMT_INLINE bool MMT_NAME(narrow_fits)(const RtCore *c, const MMT_NAME(Args) *x) {
    return c->pack && !x->win && x->n >= 1 && x->n <= MMT_GEMV_M && x->m >= MMT_VL &&
           x->k > 0 && (uint64_t)x->m * x->n * 4 <= RT_PACK_BYTES;
}

/* Runs plain product x (narrow_fits) as gemv_t on its transpose; false: not taken. */
MMT_TARGET static bool MMT_NAME(narrow)(RtCore *c, const MMT_NAME(Args) *x) {
    if (!MMT_NAME(narrow_fits)(c, x))
        return false;
    size_t n = x->n, m = x->m, ldc = x->ldc;
    bool ccont = n == 1 && ldc == 1;
    float *ct = ccont ? x->c : c->pack, *cc = x->c;
    if (!ccont && !x->zero)                  /* C^T: row r is column r of C */
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < m; i++)
                ct[r * m + i] = cc[i * ldc + r];
    MMT_NAME(Args) y = *x;
    y.a = x->b;                              /* row r of B^T: column r of B */
    y.lda = x->bt ? x->ldb : 1;
    size_t as = x->bt ? 1 : x->ldb;          /* and its element k */
    y.b = x->a;                              /* element (k, i) of A^T at a[i * lda + k] */
    y.ldb = x->lda;
    y.c = ct;
    y.ldc = ccont ? 1 : m;
    y.m = (uint32_t)n;
    y.n = (uint32_t)m;
    y.bt = true;
    switch (n) {
    case 1: MMT_NAME(gemv_t_1)(&y, 0, as); break;
    case 2: MMT_NAME(gemv_t_2)(&y, 0, as); break;
    case 3: MMT_NAME(gemv_t_3)(&y, 0, as); break;
    default: MMT_NAME(gemv_t_4)(&y, 0, as); break;
    }
    if (!ccont)
        for (size_t r = 0; r < n; r++)
            for (size_t i = 0; i < m; i++)
                cc[i * ldc + r] = ct[r * m + i];
    return true;
}
