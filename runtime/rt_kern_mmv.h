/* rt_kern_mmv.h: the streamed products of the F32 MATMUL tile kernel, included by
 * rt_kern_mmt.h (its MMT_* parameters and MMT_NAME(Args) in scope): a vector-matrix
 * product (MMT_GEMV_ROWS row of C: a decode step) streams B by rows, and a product of at
 * most MMT_GEMV_M rows with B given transposed (a decode step's tied LM head) streams
 * B's stored rows, MMT_VL of them at a time, transposed in registers.
 *
 * In both, B is read once, from wherever it is (a deferred LOAD's DRAM), and each C
 * element accumulates its products in increasing k from 0 or the old C, one fused
 * multiply-add each: the bits of the other kernels.
 */

#define MMT_GEMV_RPF 256   /* floats ahead in each row of B prefetched into L2 */
#define MMT_GEMV_TPF 16    /* the same, of the next rows of a B given transposed */

/* The row c of C accumulates a_k * (row k of B) for k below a multiple of
 * MMT_GEMV_G: MMT_GEMV_G rows of B in one pass over c, each element's FMAs still in
 * increasing k (the same chain as a row at a time). The rows are streams the
 * hardware prefetcher follows; measured on the decode step's 256 x 1024 and 512 x 512
 * tiles of B read from DRAM (rows 32 KiB apart) 1.6x the speed of a row at a time
 * with software prefetch of the next row. Prefetching the rows two passes ahead into
 * L2 did not help, the next pass's rows into L1 cost 15%; a line 1 KiB ahead in each
 * row into L2 (MMT_GEMV_RPF: the streams start early and cross their 4 KiB pages
 * without a pause) gained about 13% on 2048 x 8192 from DRAM in 1184-column tiles
 * (tests/bench/mm_gemv.c). A row shorter than that (a classifier's weight cut in
 * 256-column tiles: 1 KiB of each row, rows pages apart, no stream the hardware follows
 * across them) is prefetched the same distance ahead in the rows of the next passes,
 * which the previous code left to demand misses: 256-column tiles from DRAM 16 -> 22
 * GB/s on one thread (mm_gemv). Returns the first k left. */
MMT_INLINE uint32_t MMT_NAME(gemv_rows)(const MMT_NAME(Args) *x, float *c, const rt_f32 *a) {
    size_t n = x->n, nv = n / MMT_VL * MMT_VL, ldb = x->ldb;
    MMT_M mt = MMT_LANES((int64_t)(n - nv));
    uint32_t kg = x->k / MMT_GEMV_G * MMT_GEMV_G;
    for (uint32_t k = 0; k < kg; k += MMT_GEMV_G) {
        const float *b = x->b + k * ldb;
        MMT_V av[MMT_GEMV_G];
        for (int g = 0; g < MMT_GEMV_G; g++)
            av[g] = MMT_SET1(a[k + g]);
        /* the element MMT_GEMV_RPF floats ahead of column j in row g's stream: column
         * pc of its row in the pass pq passes on (short rows: the next passes' rows) */
        size_t pq = n ? MMT_GEMV_RPF / n : 0, pc = n ? MMT_GEMV_RPF % n : 0;
        for (size_t j = 0; j < nv; j += MMT_VL) {
            MMT_V v = MMT_LOADU(c + j);
            bool on = k + (pq + 1) * MMT_GEMV_G <= x->k;     /* inside B's rows */
            const float *pf = on ? b + pq * MMT_GEMV_G * ldb + pc : b;
#pragma GCC unroll 16
            for (int g = 0; g < MMT_GEMV_G; g++) {
                if (on)
                    __builtin_prefetch(pf + g * ldb, 0, 2);
                v = MMT_FMA(av[g], MMT_LOADU(b + g * ldb + j), v);
            }
            MMT_STOREU(c + j, v);
            if ((pc += MMT_VL) >= n)
                pc -= n, pq++;
        }
        if (nv < n) {
            MMT_V v = MMT_LOADM(mt, c + nv);
            for (int g = 0; g < MMT_GEMV_G; g++)
                v = MMT_FMA(av[g], MMT_LOADM(mt, b + g * ldb + nv), v);
            MMT_STOREM(c + nv, mt, v);
        }
    }
    return kg;
}

/* A weight B of a one-row product whose rows are short runs of a wider matrix (the
 * row of at most MMT_GEMV_BROWS floats a core's tile takes of each row, the next one
 * pages further on) kept by the session with its rows one after the other, made the
 * first time (rt_apre.c); NULL: read in place (B may change, long rows, no room, or
 * another thread is making it). In place each row is a run of a few lines that the
 * hardware prefetcher does not follow from one page to the next (gemv_rows prefetches
 * them itself); kept, the tile is one stream. resnet50's classifier, 4 tiles of 2048 x
 * 256 of a 2048 x 1024 weight, 2 threads, in the model (spyrun --profile): 207-248 ->
 * 144-158 us. The same bits: only where B's elements are read from changes. */
#define MMT_GEMV_BROWS 512
MMT_INLINE const float *MMT_NAME(gemv_brows)(RtCore *c, const MMT_NAME(Args) *x, bool bconst) {
    if (!bconst || !c->apre || !x->k || !x->n || x->n > MMT_GEMV_BROWS || x->ldb <= x->n)
        return NULL;
    RtAKey key = {x->b, x->ldb, x->n, x->k, RT_APRE_BROWS};
    bool fill;
    float *t = rt_apre_take(c->apre, &key, (size_t)x->k * x->n * 4, &fill);
    if (!fill)
        return t;
    for (uint32_t k = 0; k < x->k; k++)
        memcpy(t + (size_t)k * x->n, x->b + (size_t)k * x->ldb, (size_t)x->n * 4);
    rt_apre_filled(c->apre, &key);
    return t;
}

/* Row i of C accumulates a_ik * (row k of B), k increasing: MMT_GEMV_G rows of B a
 * pass (gemv_rows), then the rows left one at a time, each read once, contiguously,
 * with the row of C in the L1 cache. */
MMT_TARGET static void MMT_NAME(gemv_row)(const MMT_NAME(Args) *x, size_t i) {
    size_t n = x->n, nv = n / MMT_VL * MMT_VL;
    MMT_M mt = MMT_LANES((int64_t)(n - nv));
    float *c = x->c + i * x->ldc;
    if (x->zero)
        for (size_t j = 0; j < n; j++)
            c[j] = 0.0f;
    const rt_f32 *a = x->a + i * x->lda;
    for (uint32_t k = MMT_NAME(gemv_rows)(x, c, a); k < x->k; k++) {
        const float *b = x->b + k * x->ldb;
        MMT_V av = MMT_SET1(a[k]);
        const float *pf = x->b + (k + MMT_GEMV_AHEAD < x->k ? k + MMT_GEMV_AHEAD : k) * x->ldb;
        for (size_t j = 0; j < nv; j += MMT_VL) {
            if (j % 16 == 0)
                __builtin_prefetch(pf + j, 0, 3);   /* a row ahead: rows are pages apart */
            MMT_STOREU(c + j, MMT_FMA(av, MMT_LOADU(b + j), MMT_LOADU(c + j)));
        }
        if (nv < n)
            MMT_STOREM(c + nv, mt, MMT_FMA(av, MMT_LOADM(mt, b + nv), MMT_LOADM(mt, c + nv)));
    }
}

/* Columns [j0, j0 + MMT_VL) of C rows [i0, i0 + R) over all k of a B given transposed
 * (x->b: element (k,j) at b[j * ldb + k]): B's stored rows j0.. (nj of them, the
 * others taken as zeros) are read MMT_VL floats at a time, one vector per row (MMT_VL
 * streams), and transposed in registers (MMT_TRANSPOSE), so that vector q holds
 * element k0 + q of every column: each k is then one FMA per row of C. Meanwhile one
 * cache line of each of the next block's rows is prefetched into L2 every 16 k, a
 * line ahead of k0 (MMT_GEMV_TPF; at k0 itself gained less): the rows are pages
 * apart and the decode step's tied LM head reads 1 KiB of each, too short for the
 * hardware prefetcher. Transposing through the packing buffer, 4 x 4 blocks at a
 * time, then one chain of k FMAs, read its tiles from DRAM about 30% slower (single
 * thread, tests/bench/mm_gemv.c). */
MMT_INLINE void MMT_NAME(gemv_t_block)(const MMT_NAME(Args) *x, size_t i0, size_t j0,
                                        const int R, size_t as) {
    size_t n = x->n, ldb = x->ldb, nj = n - j0 < MMT_VL ? n - j0 : MMT_VL;
    size_t nn = n - j0 - nj < MMT_VL ? n - j0 - nj : MMT_VL;   /* rows of the next block */
    MMT_M mj = MMT_LANES((int64_t)nj);
    MMT_V acc[MMT_GEMV_M];
    const rt_f32 *a[MMT_GEMV_M];
    for (int r = 0; r < R; r++) {
        acc[r] = x->zero ? MMT_ZERO() : MMT_LOADM(mj, x->c + (i0 + r) * x->ldc + j0);
        a[r] = x->a + (i0 + r) * x->lda;
    }
    const float *row = x->b + j0 * ldb, *next = row + nj * ldb + MMT_GEMV_TPF;
    uint32_t k0 = 0;
    for (; k0 + MMT_VL <= x->k; k0 += MMT_VL) {
        MMT_V t[MMT_VL];
#pragma GCC unroll 16
        for (int q = 0; q < MMT_VL; q++)
            t[q] = (size_t)q < nj ? MMT_LOADU(row + q * ldb + k0) : MMT_ZERO();
        if (k0 % 16 == 0)
            for (size_t q = 0; q < nn; q++)
                __builtin_prefetch(next + q * ldb + k0, 0, 2);
        MMT_TRANSPOSE(t);
#pragma GCC unroll 16
        for (int q = 0; q < MMT_VL; q++)
#pragma GCC unroll 4
            for (int r = 0; r < R; r++)
                acc[r] = MMT_FMA(MMT_SET1(a[r][(k0 + q) * as]), t[q], acc[r]);
    }
    if (k0 < x->k) {                 /* the last k: masked loads, the FMAs it needs */
        MMT_M mk = MMT_LANES((int64_t)(x->k - k0));
        MMT_V t[MMT_VL];
        for (int q = 0; q < MMT_VL; q++)
            t[q] = (size_t)q < nj ? MMT_LOADM(mk, row + q * ldb + k0) : MMT_ZERO();
        MMT_TRANSPOSE(t);
        for (uint32_t q = 0; k0 + q < x->k; q++)
            for (int r = 0; r < R; r++)
                acc[r] = MMT_FMA(MMT_SET1(a[r][(k0 + q) * as]), t[q], acc[r]);
    }
    for (int r = 0; r < R; r++)
        MMT_STOREM(x->c + (i0 + r) * x->ldc + j0, mj, acc[r]);
}

/* One function per row count of the products with B given transposed: C rows
 * [i0, i0 + R), MMT_VL columns at a time (MMT_NAME(gemv_t_block)); A's element (i, k)
 * at a[i * lda + k * as] (as > 1: rt_kern_mmn.h's columns of a B as rows of A). */
#define MMT_GEMV_T(R)                                                                    \
    MMT_TARGET static void MMT_NAME(gemv_t_##R)(const MMT_NAME(Args) *x, size_t i0,      \
                                                size_t as) {                             \
        for (size_t j0 = 0; j0 < x->n; j0 += MMT_VL)                                     \
            if (as == 1)                      /* the decode step's: unit stride inlined */ \
                MMT_NAME(gemv_t_block)(x, i0, j0, R, 1);                                 \
            else                                                                         \
                MMT_NAME(gemv_t_block)(x, i0, j0, R, as);                                \
    }
MMT_GEMV_T(1)
MMT_GEMV_T(2)
MMT_GEMV_T(3)
MMT_GEMV_T(4)

/* The streamed product: with B given transposed the rows of C in groups of up to
 * MMT_GEMV_M, else each row of C by rows of B. */
MMT_TARGET static void MMT_NAME(gemv_all)(const MMT_NAME(Args) *x) {
    for (uint32_t i0 = 0; i0 < x->m; i0 += x->bt ? MMT_GEMV_M : 1)
        switch (!x->bt ? 0 : x->m - i0 < MMT_GEMV_M ? x->m - i0 : MMT_GEMV_M) {
        case 0: MMT_NAME(gemv_row)(x, i0); break;
        case 1: MMT_NAME(gemv_t_1)(x, i0, 1); break;
        case 2: MMT_NAME(gemv_t_2)(x, i0, 1); break;
        case 3: MMT_NAME(gemv_t_3)(x, i0, 1); break;
        default: MMT_NAME(gemv_t_4)(x, i0, 1); break;
        }
}
