/* rt_dma.c: LOAD / STORE (N-d strided copies between DRAM and LX) and GATHER.
 * Copies first drop unit dims and merge dims that are contiguous on both sides; an
 * innermost stride of 1 on both sides becomes memcpy runs.
 */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "rt_copy.h"
#include "rt_exec.h"

/* Builds a collapsed copy plan (strides scaled by esize: bytes, or elements with
 * esize 1); returns false when there is nothing to copy. */
bool rt_plan_copy(RtCopyPlan *p, const uint32_t *dims, const int32_t *sst,
                      const int32_t *dst, unsigned esize) {
    p->n = 0;
    for (int d = 0; d < ISA_MAX_DIMS; d++) {
        if (dims[d] == 0)
            return false;
        if (dims[d] == 1)
            continue;
        int64_t s = (int64_t)sst[d] * esize, t = (int64_t)dst[d] * esize;
        if (p->n > 0) {
            int i = p->n - 1; /* merge with the outer dim if it steps over this one exactly */
            if (p->ss[i] == s * (int64_t)dims[d] && p->ds[i] == t * (int64_t)dims[d]) {
                p->dim[i] *= dims[d];
                p->ss[i] = s;
                p->ds[i] = t;
                continue;
            }
        }
        p->dim[p->n] = dims[d];
        p->ss[p->n] = s;
        p->ds[p->n] = t;
        p->n++;
    }
    if (p->n == 0) { /* a single element */
        p->n = 1;
        p->dim[0] = 1;
        p->ss[0] = p->ds[0] = esize;
    }
    return true;
}

/* Copies one innermost row of len elements with byte strides ss / ds. */
static void copy_row(uint8_t *d, const uint8_t *s, int64_t len, int64_t ds, int64_t ss,
                     unsigned esize) {
    if (ss == (int64_t)esize && ds == (int64_t)esize) {
        rt_copy_bytes(d, s, (size_t)len * esize);
        return;
    }
    switch (esize) {
    case 1:
        for (int64_t i = 0; i < len; i++)
            d[i * ds] = s[i * ss];
        break;
    case 2:
        for (int64_t i = 0; i < len; i++)
            memcpy(d + i * ds, s + i * ss, 2);
        break;
    case 4:
        for (int64_t i = 0; i < len; i++)
            memcpy(d + i * ds, s + i * ss, 4);
        break;
    default:
        for (int64_t i = 0; i < len; i++)
            memcpy(d + i * ds, s + i * ss, 8);
        break;
    }
}

/* Copies na blocks (byte strides ad / as) of nr rows (byte strides rd / rs) of nb
 * contiguous bytes, nb <= 32: a window load of a pooling or a convolution, whose
 * rows are too short for a call per block. */
#define COPY_BLOCKS_N(N)                                                                 \
    for (uint64_t a = 0; a < na; a++)                                                    \
        for (uint64_t r = 0; r < nr; r++)                                                \
            memcpy(d + (int64_t)a * ad + (int64_t)r * rd,                               \
                   s + (int64_t)a * as + (int64_t)r * rs, N)

/* Copies na blocks of nr short contiguous rows of nb bytes (see COPY_BLOCKS_N) with
 * fixed-size moves; false (nothing done) when nb is not a multiple of 4. */
static bool copy_blocks(uint8_t *d, const uint8_t *s, uint64_t na, int64_t ad, int64_t as,
                        uint64_t nr, int64_t rd, int64_t rs, size_t nb) {
    switch (nb) {
    case 4: COPY_BLOCKS_N(4); return true;
    case 8: COPY_BLOCKS_N(8); return true;
    case 12: COPY_BLOCKS_N(12); return true;
    case 16: COPY_BLOCKS_N(16); return true;
    case 20: COPY_BLOCKS_N(20); return true;
    case 24: COPY_BLOCKS_N(24); return true;
    case 28: COPY_BLOCKS_N(28); return true;
    case 32: COPY_BLOCKS_N(32); return true;
    default: return false;
    }
}

/* Scalar part of copy_transpose4: d[r * rd + 4 * i] = s[4 * r + i * ss] for
 * r0 <= r < r1, i0 <= i < i1. */
static void transpose4_rect(uint8_t *d, const uint8_t *s, int64_t rd, int64_t ss,
                            uint64_t r0, uint64_t r1, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; i++)
        for (uint64_t r = r0; r < r1; r++)
            memcpy(d + (int64_t)r * rd + 4 * i, s + 4 * (int64_t)r + i * ss, 4);
}

/* Copies a transpose of 4-byte elements: d[r * rd + 4 * i] = s[4 * r + i * ss] for
 * r < nr, i < len (source rows contiguous along r, destination along i), as 4 x 4
 * blocks moved through vector registers (bits unchanged), in bands of 16 r so each
 * source cache line is read once. */
static void copy_transpose4(uint8_t *d, const uint8_t *s, uint64_t nr, int64_t rd,
                            int64_t len, int64_t ss) {
    uint64_t nr4 = 0;
    int64_t len4 = 0;
#if defined(__SSE2__)
    nr4 = nr & ~(uint64_t)3;
    len4 = len & ~(int64_t)3;
    for (uint64_t r0 = 0; r0 < nr4; r0 += 16) {
        uint64_t r1 = nr4 - r0 < 16 ? nr4 : r0 + 16;
        for (int64_t i = 0; i < len4; i += 4)
            for (uint64_t r = r0; r < r1; r += 4) {
                const uint8_t *sp = s + 4 * (int64_t)r + i * ss;
                __m128i a0 = _mm_loadu_si128((const __m128i *)sp);
                __m128i a1 = _mm_loadu_si128((const __m128i *)(sp + ss));
                __m128i a2 = _mm_loadu_si128((const __m128i *)(sp + 2 * ss));
                __m128i a3 = _mm_loadu_si128((const __m128i *)(sp + 3 * ss));
                __m128i t0 = _mm_unpacklo_epi32(a0, a1), t1 = _mm_unpacklo_epi32(a2, a3);
                __m128i t2 = _mm_unpackhi_epi32(a0, a1), t3 = _mm_unpackhi_epi32(a2, a3);
                uint8_t *dp = d + (int64_t)r * rd + 4 * i;
                _mm_storeu_si128((__m128i *)dp, _mm_unpacklo_epi64(t0, t1));
                _mm_storeu_si128((__m128i *)(dp + rd), _mm_unpackhi_epi64(t0, t1));
                _mm_storeu_si128((__m128i *)(dp + 2 * rd), _mm_unpacklo_epi64(t2, t3));
                _mm_storeu_si128((__m128i *)(dp + 3 * rd), _mm_unpackhi_epi64(t2, t3));
            }
    }
#endif
    transpose4_rect(d, s, rd, ss, 0, nr4, len4, len);  /* right strip */
    transpose4_rect(d, s, rd, ss, nr4, nr, 0, len);    /* bottom rows */
}

/* The two innermost dims of a plan: nr rows (byte strides rd / rs) of len elements
 * (byte strides ds / ss). Short contiguous rows (a window of a few elements) are
 * copied with fixed-size moves, transposes in bands. */
static void copy_block(uint8_t *d, const uint8_t *s, uint64_t nr, int64_t rd, int64_t rs,
                       int64_t len, int64_t ds, int64_t ss, unsigned esize) {
    size_t nb = (size_t)len * esize;
    if (ss == (int64_t)esize && ds == (int64_t)esize) {
        if (nb <= 32 && copy_blocks(d, s, 1, 0, 0, nr, rd, rs, nb))
            return;
        rt_copy_rows(d, rd, s, rs, nr, nb);   /* contiguous rows */
        return;
    }
    if (esize == 4 && rs == 4 && ds == 4 && ss != 4 && nr >= 4) {
        copy_transpose4(d, s, nr, rd, len, ss);
        return;
    }
    for (uint64_t r = 0; r < nr; r++)
        copy_row(d + (int64_t)r * rd, s + (int64_t)r * rs, len, ds, ss, esize);
}

/* Runs a copy plan from s to d (odometer over the dims outside the innermost two, or
 * three when the innermost rows are short and contiguous: see copy_blocks). */
static void run_copy(const RtCopyPlan *p, uint8_t *d, const uint8_t *s, unsigned esize) {
    int in = p->n - 1;
    if (in == 0) {
        copy_row(d, s, (int64_t)p->dim[0], p->ds[0], p->ss[0], esize);
        return;
    }
    size_t nb = (size_t)p->dim[in] * esize;
    bool blocks = in >= 2 && p->ss[in] == (int64_t)esize && p->ds[in] == (int64_t)esize &&
                  nb <= 32;
    int mid = in - 1, base = blocks ? in - 2 : mid;
    uint64_t idx[ISA_MAX_DIMS] = {0};
    for (;;) {
        if (!blocks || !copy_blocks(d, s, p->dim[base], p->ds[base], p->ss[base], p->dim[mid],
                                    p->ds[mid], p->ss[mid], nb))
            for (uint64_t a = 0; a < (blocks ? p->dim[base] : 1); a++)
                copy_block(d + (int64_t)a * p->ds[base], s + (int64_t)a * p->ss[base],
                           p->dim[mid], p->ds[mid], p->ss[mid], (int64_t)p->dim[in], p->ds[in],
                           p->ss[in], esize);
        int k = base - 1;
        for (; k >= 0; k--) {
            d += p->ds[k];
            s += p->ss[k];
            if (++idx[k] < p->dim[k])
                break;
            d -= p->ds[k] * (int64_t)p->dim[k];
            s -= p->ss[k] * (int64_t)p->dim[k];
            idx[k] = 0;
        }
        if (k < 0)
            return;
    }
}

/* Executes a verified LOAD (store = false) or STORE. */
void rt_dma(RtCore *c, const SpyDma *x, bool store) {
    uint8_t *lx = c->lx + x->lx;
    uint8_t *dr = c->seg[x->seg] + x->dram_off;
    if (x->flags & ISA_F_F32) {          /* float32 in DRAM, DLFloat16 in LX */
        rt_dma_f32(lx, dr, x, store);
        return;
    }
    RtCopyPlan p;
    if (store) {
        if (rt_plan_copy(&p, x->dims, x->lx_stride, x->dram_stride, x->esize))
            run_copy(&p, dr, lx, x->esize);
    } else {
        if (rt_plan_copy(&p, x->dims, x->dram_stride, x->lx_stride, x->esize))
            run_copy(&p, lx, dr, x->esize);
    }
}

/* rt_gather of single 4-byte elements into consecutive ones: the loop with nothing
 * else in it. */
static int gather_elems4(RtCore *c, const SpyGather *g, const uint8_t *tab,
                         const uint8_t *idx, uint8_t *dst) {
    int64_t bound = g->bound, st = g->row_stride * 4;
    for (uint32_t j = 0; j < g->nidx; j++) {
        int32_t i;
        memcpy(&i, idx + 4 * (size_t)j, 4);
        int64_t r = i < 0 ? (int64_t)i + bound : i;
        if (r < 0 || r >= bound) {
            c->err_value = i;
            return RT_XERR_INDEX;
        }
        memcpy(dst + 4 * (size_t)j, tab + r * st, 4);
    }
    return RT_XOK;
}

/* Executes a verified GATHER; returns RT_XERR_INDEX (value in c) on a bad index. The
 * table is in DRAM and the rows go to LX, so they never overlap; short rows are copied
 * inline (rt_copy_bytes): a linear Resize gathers one element per index, and a library
 * call per element was most of its time. */
int rt_gather(RtCore *c, const SpyGather *g) {
    const uint8_t *tab = c->seg[g->seg] + g->dram_off;
    const uint8_t *idx = c->lx + g->lx_idx;
    uint8_t *dst = c->lx + g->lx_dst;
    size_t row_bytes = (size_t)g->row_elems * g->esize;
    int64_t ds = (int64_t)g->dst_row_stride * g->esize;
    if (row_bytes == 4 && ds == 4)
        return gather_elems4(c, g, tab, idx, dst);
    for (uint32_t j = 0; j < g->nidx; j++) {
        int32_t i;
        memcpy(&i, idx + 4 * (size_t)j, 4);
        int64_t r = i < 0 ? (int64_t)i + g->bound : i;
        if (r < 0 || r >= (int64_t)g->bound) {
            c->err_value = i;
            return RT_XERR_INDEX;
        }
        int64_t off = r * g->row_stride; /* verified in range for r < bound */
        rt_copy_bytes(dst + j * ds, tab + off * g->esize, row_bytes);
    }
    return RT_XOK;
}
