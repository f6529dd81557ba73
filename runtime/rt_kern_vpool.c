/* rt_kern_vpool.c: runs of F32 VEC MAX / MIN / ADD over the taps of a pooling window
 * (codegen/cg_reduce.c; ADD: average pooling's sums): a first VEC combines two taps
 * into the result region, each following one combines the region in place with one
 * more tap. The taps are read with the same column stride (1 or 2, a window's stride),
 * apart from the region.
 *
 * The run is computed in one pass, its results kept in registers: the same MAX / MIN
 * of isa.md per element, or the same additions, in the same order (the result so far
 * is operand 0), so the bits equal those of one instruction after the other; the
 * region goes through the cache once instead of once per tap. On AVX-512 hosts a row
 * runs in rt_kern_vpool512.c (reading its taps in place from DRAM where a deferred
 * LOAD left them, rt_vec_pool_views), a MAX / MIN whose taps form a window's grid
 * each tap row once (pool_sep), elsewhere eight results at a time here.
 */
#include <string.h>

#include "rt_exec.h"
#include "rt_vlanes.h"

/* acc := MAX (or MIN) of acc and x as isa.md defines it: acc when it is better or NaN,
 * else x (bitwise select). */
#define SELW(acc, x, max, VI, VF)                                                          \
    do {                                                                                   \
        VI m_ = ((max) ? (acc) > (x) : (acc) < (x)) | ((acc) != (acc));                    \
        (acc) = (VF)((m_ & (VI)(acc)) | (~m_ & (VI)(x)));                                  \
    } while (0)
#define SEL8(acc, x, max) SELW(acc, x, max, v8i, v8f)

/* Byte range [lo, hi) a strided F32 operand of rows x cols reads (one element of
 * slack past the end for the stride-2 loads). */
static void span_of(uint32_t base, int32_t rs, int32_t cs, uint32_t rows, uint32_t cols,
                    uint64_t *lo, uint64_t *hi) {
    *lo = base;
    *hi = base + 4 * ((uint64_t)(rows - 1) * (uint32_t)rs +
                      (uint64_t)(cols - 1) * (uint32_t)cs + 2);
}

/* Whether v belongs to the run that r starts (first: v is r): F32 MAX / MIN / ADD like r,
 * same region, its tap (both taps for the first) at r's column stride and apart from
 * the region, a later one combining the region in place as operand 0. */
static bool pool_tap_of(const SpyVec *r, const SpyVec *v, bool first) {
    if ((v->fn != ISA_VF_MAX && v->fn != ISA_VF_MIN && v->fn != ISA_VF_ADD) || v->fn != r->fn ||
        v->dtype != ISA_DT_F32 || (v->src_dtype && v->src_dtype != ISA_DT_F32) || v->flags ||
        v->dst != r->dst || v->rows != r->rows || v->cols != r->cols ||
        v->dst_rs != r->dst_rs || v->src_cs[1] != r->src_cs[1] || !v->rows || !v->cols ||
        (v->src_cs[1] != 1 && v->src_cs[1] != 2) || v->dst_rs < 0 || v->src_rs[1] < 0)
        return false;
    uint64_t dlo = v->dst;
    uint64_t dhi = dlo + 4 * ((uint64_t)(v->rows - 1) * (uint32_t)v->dst_rs + v->cols);
    for (int q = first ? 0 : 1; q < 2; q++) {
        uint64_t lo, hi;
        if (v->src_cs[q] != v->src_cs[1] || v->src_rs[q] < 0)
            return false;
        span_of(v->src[q], v->src_rs[q], v->src_cs[q], v->rows, v->cols, &lo, &hi);
        if (hi > dlo && lo < dhi)
            return false;
    }
    return first || (v->src[0] == v->dst && v->src_rs[0] == v->dst_rs && v->src_cs[0] == 1);
}

/* Length of the pooling run at code[0..n) (0: none): a first MAX / MIN / ADD of two taps,
 * then those of the region and one more tap each (pool_tap_of). */
uint32_t rt_vec_pool_run(const SpyInsn *code, uint32_t n) {
    const SpyVec *r = &code[0].vec;
    if (code[0].opcode != ISA_VEC || !pool_tap_of(r, r, true))
        return 0;
    uint32_t nt = 1;
    while (nt < n && nt + 1 < RT_TAPS_MAX && code[nt].opcode == ISA_VEC &&
           pool_tap_of(r, &code[nt].vec, false))
        nt++;
    return nt;
}

/* The loop of a pooling row (pool_row, pool_row_add): acc takes each further tap x
 * through STEP8, eight lanes at a time. */
#define POOL_LOOPS(STEP8)                                                                  \
    do {                                                                                   \
        for (; j < n; j += 8) { /* the last block: its columns stored, the rest dropped */ \
            v8f acc, x;                                                                    \
            size_t o = 4 * (size_t)(j * cs);                                               \
            RT_LOAD8(acc, s[0] + o, cs);                                                   \
            for (uint32_t t = 1; t < ns; t++) {                                            \
                RT_LOAD8(x, s[t] + o, cs);                                                 \
                STEP8;                                                                     \
            }                                                                              \
            memcpy(d + 4 * (size_t)j, &acc, 4 * (size_t)(n - j < 8 ? n - j : 8));          \
        }                                                                                  \
    } while (0)

/* One row of a pooling run: d[j] = sel(...sel(sel(s_0[j], s_1[j]), s_2[j])..., s_nt[j])
 * over the nt + 1 taps s (column stride cs), eight columns at a time in registers. A
 * last block of fewer than eight columns reads up to 15 elements past a tap's last one
 * (inside the scratchpad's RT_LX_SLACK bytes) and stores only its own columns. */
RT_HOT static void pool_row(uint8_t *d, const uint8_t *const *s, uint32_t ns, int64_t cs,
                            uint32_t n, bool max) {
    uint32_t j = 0;
    POOL_LOOPS(SEL8(acc, x, max));
}

/* pool_row for ADD: d[j] = (...((s_0[j] + s_1[j]) + s_2[j]) ...) + s_nt[j]; a function
 * of its own (with the select's function as a parameter, the AVX-512 clone compared
 * lane by lane: resnet50's max pooling 5x slower). */
RT_HOT static void pool_row_add(uint8_t *d, const uint8_t *const *s, uint32_t ns, int64_t cs,
                                uint32_t n) {
    uint32_t j = 0;
    POOL_LOOPS(acc = acc + x);
}

/* The nt instructions of a pooling run (rt_vec_pool_run) row by row, each row's taps
 * in one pass: by rt_pool_row512 when fast and the host has AVX-512, else pool_row. */
static void pool_rows(RtCore *c, const SpyInsn *code, uint32_t nt, bool fast) {
    const SpyVec *r = &code[0].vec;
    const uint8_t *s[RT_TAPS_MAX];

    for (uint32_t row = 0; row < r->rows; row++) {
        s[0] = c->lx + r->src[0] + (int64_t)row * r->src_rs[0] * 4;
        for (uint32_t t = 0; t < nt; t++)
            s[t + 1] = c->lx + code[t].vec.src[1] + (int64_t)row * code[t].vec.src_rs[1] * 4;
        uint8_t *d = c->lx + r->dst + (int64_t)row * r->dst_rs * 4;
#if RT_HAVE_X86_KERNELS
        if (fast && rt_pool_row512(d, s, nt + 1, r->src_cs[1], r->cols, r->fn))
            continue;
#endif
        if (r->fn == ISA_VF_ADD)
            pool_row_add(d, s, nt + 1, r->src_cs[1], r->cols);
        else
            pool_row(d, s, nt + 1, r->src_cs[1], r->cols, r->fn == ISA_VF_MAX);
    }
}

#if RT_HAVE_X86_KERNELS
/* A MAX / MIN pooling run's taps as a kh x kw grid, row-major like the window: tap
 * (dy, dx) at LX byte a0 + 4 * (dy * rw + dx), every tap with the row stride sh * rw
 * (an output row steps sh tap rows, fewer than kh: consecutive output rows share tap
 * rows). */
typedef struct {
    uint32_t a0, kh, kw, sh;
    int64_t rw;
} PoolGrid;

/* Whether the run of nt instructions at code is a grid pool_sep takes (into *g). */
static bool pool_grid(const SpyInsn *code, uint32_t nt, PoolGrid *g) {
    const SpyVec *r = &code[0].vec;
    uint32_t ns = nt + 1, tap[RT_TAPS_MAX + 1], kw = 1;
    int32_t sr = r->src_rs[0];
    if (r->fn == ISA_VF_ADD || ns < 4 || ns > RT_TAPS_MAX || r->src_rs[1] != sr || sr <= 0)
        return false;          /* ADD: grouped sums would round differently */
    tap[0] = r->src[0];
    for (uint32_t t = 0; t < nt; t++) {
        tap[t + 1] = code[t].vec.src[1];
        if (code[t].vec.src_rs[1] != sr)
            return false;
    }
    while (kw < ns && tap[kw] == tap[kw - 1] + 4)
        kw++;
    if (kw == ns || ns % kw || tap[kw] <= tap[0] || (tap[kw] - tap[0]) % 4)
        return false;
    *g = (PoolGrid){.a0 = tap[0], .kh = ns / kw, .kw = kw, .rw = (tap[kw] - tap[0]) / 4};
    for (uint32_t t = 0; t < ns; t++)
        if (tap[t] != tap[0] + 4 * ((t / kw) * g->rw + t % kw))
            return false;
    g->sh = (uint32_t)(sr / g->rw);
    return sr % g->rw == 0 && g->sh < g->kh;
}

/* The one pending view of d that LX bytes [lo, hi) touch; NULL when none or several. */
static const RtView *sole_view(const RtDefer *d, int64_t lo, int64_t hi) {
    const RtView *v = NULL;
    for (int i = 0; i < d->n; i++)
        if ((int64_t)d->v[i].hi > lo && (int64_t)d->v[i].lo < hi) {
            if (v)
                return NULL;
            v = &d->v[i];
        }
    return v;
}

/* The bits of the 4-byte elements [c0, c1) of rows [r0, r1) of a grid's tap rows (LX
 * byte a0, brs bytes apart) that differ from val, or-ed together (0: all are val). */
static uint32_t differ(const RtCore *c, uint32_t a0, int64_t brs, uint64_t r0, uint64_t r1,
                       uint64_t c0, uint64_t c1, uint32_t val) {
    uint32_t x = 0;
    for (uint64_t r = r0; r < r1; r++) {
        const uint8_t *p = c->lx + a0 + (int64_t)r * brs;
        for (uint64_t e = c0; e < c1; e++) {
            uint32_t w;
            memcpy(&w, p + 4 * e, 4);
            x |= w ^ val;
        }
    }
    return x;
}

/* A grid's tap rows (prows rows of ext elements from LX byte a0, brs bytes apart) as
 * rows of one pending view (the only one under them) inside a border of LX bytes that
 * all hold the same value: the padding a VFILL put around a deferred LOAD (rt_fill.c
 * fills only the border), resnet50's 3 x 3 stride-2 max pool. Into *ps: the taps read
 * in place, the border's value read once (checked against every border element: any
 * instruction may have written there), the LOAD never carried out (its copy into LX
 * was a third of the pool's time; the border read in the kernel instead, a line a
 * row, was slower at 2 threads than this check). False: not so (no view or more than
 * one under the rows, a transposed one, rows of another pitch, a border of several
 * values, or no border at all: rt_defer_rows_src then finds the rows). */
static bool pool_border(const RtCore *c, const RtDefer *d, uint32_t a0, int64_t brs,
                        uint64_t prows, uint64_t ext, RtPoolSrc *ps) {
    int64_t end = (int64_t)a0 + (int64_t)(prows - 1) * brs + 4 * (int64_t)ext;
    const RtView *v = sole_view(d, a0, end);
    if (!v || v->t || (v->rows > 1 && (int64_t)v->lrs != brs) || v->rowb % 4)
        return false;
    int64_t off = (int64_t)v->lo - a0;
    int64_t rv = off >= 0 ? off / brs : -((-off + brs - 1) / brs);  /* view row 0's row */
    int64_t cb = off - rv * brs;                                     /* its column byte */
    if (cb % 4 || cb + (int64_t)v->rowb > brs || cb / 4 >= (int64_t)ext)
        return false;
    uint64_t c0 = (uint64_t)cb / 4, c1 = c0 + v->rowb / 4;
    int64_t r0 = rv > 0 ? rv : 0, r1 = rv + (int64_t)v->rows;
    r1 = r1 < (int64_t)prows ? r1 : (int64_t)prows;
    c1 = c1 < ext ? c1 : ext;
    if (r0 >= r1 || (r0 == 0 && r1 == (int64_t)prows && c0 == 0 && c1 == ext))
        return false;
    uint32_t val;   /* a border element's: row 0's first, else its first past the view's
                       columns, else row r1's first */
    int64_t at = r0 > 0 || c0 > 0 ? 0 : c1 < ext ? 4 * (int64_t)c1 : r1 * brs;
    memcpy(&val, c->lx + a0 + at, 4);
    if (differ(c, a0, brs, 0, (uint64_t)r0, 0, ext, val) |
        differ(c, a0, brs, (uint64_t)r1, prows, 0, ext, val) |
        differ(c, a0, brs, (uint64_t)r0, (uint64_t)r1, 0, c0, val) |
        differ(c, a0, brs, (uint64_t)r0, (uint64_t)r1, c1, ext, val))
        return false;
    *ps = (RtPoolSrc){.s = v->src + (r0 - rv) * v->drs, .srs = v->drs, .r0 = (uint64_t)r0,
                      .r1 = (uint64_t)r1, .c0 = c0, .c1 = c1};
    memcpy(&ps->v, &val, 4);
    return true;
}

/* A MAX / MIN pooling run over a grid of taps (pool_grid) by rt_pool_grid512: each tap
 * row's kw taps folded once into a row of partial results, each output row then from
 * the kh partial rows under it, rather than all kh x kw taps for every output row
 * (resnet50's 3 x 3 stride-2 max pool: a tap row serves two output rows; alone, 2
 * threads, 0.102 -> 0.073 ms). Taps read from the DRAM of the deferred LOAD whose view
 * holds all their rows (d not NULL), or their interior inside a border of one value
 * (pool_border), else from LX, the views over them carried out first. The same bits as
 * tap after tap: a left fold of MAX (MIN) keeps the first NaN in tap order, else the
 * last tap equal to the maximum (a tie of +0 and -0: the later one); folding each tap
 * row first, then the rows in order, keeps the same one, the taps being row-major.
 * False: not a grid, or a NaN may be among the taps (then the caller runs the taps one
 * by one over everything). */
static bool pool_sep(RtCore *c, RtDefer *d, const SpyInsn *code, uint32_t nt) {
    const SpyVec *r = &code[0].vec;
    PoolGrid g;
    int64_t cs = r->src_cs[1], brs;
    if ((cs != 1 && cs != 2) || !rt_host_has(RT_HOST_AVX512) || !pool_grid(code, nt, &g))
        return false;
    uint64_t prows = (uint64_t)(r->rows - 1) * g.sh + g.kh;
    uint64_t ext = (uint64_t)(r->cols - 1) * (uint64_t)cs + g.kw;   /* elements a tap row */
    RtPoolSrc ps = {.s = c->lx + g.a0, .srs = g.rw * 4, .r1 = prows, .c1 = ext};
    if (d) {
        int64_t lo, hi;
        rt_span2(r->rows, r->dst_rs, r->cols, 1, 4, &lo, &hi);
        rt_defer_flush_lx(c, d, (int64_t)r->dst + lo, (int64_t)r->dst + hi);
        const uint8_t *base = rt_defer_rows_src(d, g.a0, prows, ps.srs, 4 * ext, &brs);
        if (base)
            ps.s = base, ps.srs = brs;
        else if (!pool_border(c, d, g.a0, ps.srs, prows, ext, &ps))
            rt_defer_flush_lx(c, d, g.a0, g.a0 + (int64_t)(prows - 1) * ps.srs +
                                              4 * (int64_t)ext);
    }
    return rt_pool_grid512(c->lx + r->dst, (int64_t)r->dst_rs * 4, &ps, g.kh, g.kw, g.sh, cs,
                           r->rows, r->cols, r->fn);
}
#endif

void rt_vec_pool(RtCore *c, const SpyInsn *code, uint32_t nt) {
#if RT_HAVE_X86_KERNELS
    if (pool_sep(c, NULL, code, nt))
        return;
#endif
    pool_rows(c, code, nt, true);
}

void rt_vec_pool_portable(RtCore *c, const SpyInsn *code, uint32_t nt) {
    pool_rows(c, code, nt, false);
}

#if RT_HAVE_X86_KERNELS
/* Where tap a (LX byte address, row stride rs elements) of a pooling run of rows x
 * rowb bytes is read: in place from the DRAM of the deferred LOAD whose view holds it
 * row for row, else in LX once the views it touches are carried out; *brs: the row
 * stride in bytes there. */
static const uint8_t *tap_at(RtCore *c, RtDefer *d, uint32_t a, int32_t rs, int64_t cs,
                             uint32_t rows, uint32_t cols, uint64_t rowb, int64_t *brs) {
    const uint8_t *p = rt_defer_rows_src(d, a, rows, (int64_t)rs * 4, rowb, brs);
    if (p)
        return p;
    int64_t lo, hi;
    rt_span2(rows, rs, cols, cs, 4, &lo, &hi);
    rt_defer_flush_lx(c, d, (int64_t)a + lo, (int64_t)a + hi);
    *brs = (int64_t)rs * 4;
    return c->lx + a;
}

/* A pooling run (rt_vec_pool_run, nt instructions) whose taps are read in
 * place from the DRAM of the deferred LOAD that brought them (a pooling window's
 * input patch, rt_defer.c), not from its copy in LX: the patch is never copied
 * (squeezenet's and resnet50's 3 x 3 stride-2 max pools: the copy was a third of
 * their time). A tap no view holds is read in LX as rt_vec_pool does. Only where
 * rt_pool_row512 runs it: it reads nothing past a tap's last element (the portable
 * row reads up to 15 more, inside LX's slack but maybe past the end of DRAM); false
 * (nothing done) otherwise. The same values as from the copy: the same bits. */
bool rt_vec_pool_views(RtCore *c, RtDefer *d, const SpyInsn *code, uint32_t nt) {
    const SpyVec *r = &code[0].vec;
    if (!rt_host_has(RT_HOST_AVX512) || nt + 1 > RT_TAPS_MAX)
        return false;
    if (pool_sep(c, d, code, nt))
        return true;
    int64_t cs = r->src_cs[1], lo, hi;
    uint64_t rowb = 4 * ((uint64_t)(r->cols - 1) * (uint64_t)cs + 1);
    rt_span2(r->rows, r->dst_rs, r->cols, 1, 4, &lo, &hi);
    rt_defer_flush_lx(c, d, (int64_t)r->dst + lo, (int64_t)r->dst + hi);
    const uint8_t *base[RT_TAPS_MAX], *s[RT_TAPS_MAX];
    int64_t brs[RT_TAPS_MAX];
    base[0] = tap_at(c, d, r->src[0], r->src_rs[0], cs, r->rows, r->cols, rowb, &brs[0]);
    for (uint32_t t = 0; t < nt; t++)
        base[t + 1] = tap_at(c, d, code[t].vec.src[1], code[t].vec.src_rs[1], cs, r->rows,
                             r->cols, rowb, &brs[t + 1]);
    for (uint32_t row = 0; row < r->rows; row++) {
        for (uint32_t t = 0; t <= nt; t++)
            s[t] = base[t] + (int64_t)row * brs[t];
        uint8_t *dst = c->lx + r->dst + (int64_t)row * r->dst_rs * 4;
        if (!rt_pool_row512(dst, s, nt + 1, cs, r->cols, r->fn))
            return false;   /* not reached: the host and the stride were checked */
    }
    return true;
}
#endif
