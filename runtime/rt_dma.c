/* rt_dma.c: LOAD / STORE (N-d strided copies between DRAM and LX) and GATHER.
 * Copies first drop unit dims and merge dims that are contiguous on both sides; an
 * innermost stride of 1 on both sides becomes memcpy runs.
 */
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

#include "rt_exec.h"

typedef struct {
    int n;                           /* dims after collapsing, outermost first */
    uint64_t dim[ISA_MAX_DIMS];
    int64_t ss[ISA_MAX_DIMS];        /* source strides, bytes */
    int64_t ds[ISA_MAX_DIMS];        /* destination strides, bytes */
} CopyPlan;

/* Builds a collapsed copy plan; returns false when there is nothing to copy. */
static bool plan_copy(CopyPlan *p, const uint32_t *dims, const int32_t *sst,
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

/* Copies n bytes between non-overlapping buffers; short runs (the common case: rows
 * of a few sticks) use inline 32/16/8/4-byte moves with an overlapping last move
 * instead of a library call. */
static inline void copy_bytes(uint8_t *d, const uint8_t *s, size_t n) {
    uint8_t t[32];
    if (n > 256) {
        memcpy(d, s, n);
    } else if (n >= 32) {
        size_t i = 0;
        for (; i + 32 <= n; i += 32)
            memcpy(t, s + i, 32), memcpy(d + i, t, 32);
        if (i < n)
            memcpy(t, s + n - 32, 32), memcpy(d + n - 32, t, 32);
    } else if (n >= 16) {
        memcpy(t, s, 16), memcpy(t + 16, s + n - 16, 16);
        memcpy(d, t, 16), memcpy(d + n - 16, t + 16, 16);
    } else if (n >= 8) {
        memcpy(t, s, 8), memcpy(t + 8, s + n - 8, 8);
        memcpy(d, t, 8), memcpy(d + n - 8, t + 8, 8);
    } else if (n >= 4) {
        memcpy(t, s, 4), memcpy(t + 4, s + n - 4, 4);
        memcpy(d, t, 4), memcpy(d + n - 4, t + 4, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            d[i] = s[i];
    }
}

/* Copies one innermost row of len elements with byte strides ss / ds. */
static void copy_row(uint8_t *d, const uint8_t *s, int64_t len, int64_t ds, int64_t ss,
                     unsigned esize) {
    if (ss == (int64_t)esize && ds == (int64_t)esize) {
        copy_bytes(d, s, (size_t)len * esize);
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

/* Tile of the blocked copy below: TB x TB elements keep both the rows read and the rows
 * written within L1. */
#define TRANSPOSE_TILE 16

/* Copies one tile of nr x len elements of esize bytes (r outer at byte strides rd / rs,
 * i inner at ds / ss), walking r innermost: the side whose rows are contiguous. */
#define COPY_TILE(N)                                                                     \
    for (int64_t i = 0; i < len; i++)                                                    \
        for (uint64_t r = 0; r < nr; r++)                                                \
            memcpy(d + (int64_t)r * rd + i * ds, s + (int64_t)r * rs + i * ss, N)

#if defined(__x86_64__) && defined(__GNUC__)
/* A full 16 x 16 tile of 4-byte elements whose destination rows are contiguous: each
 * destination row is one 16-lane gather (byte offsets i * ss) and one store. */
__attribute__((target("avx512f"))) static void tile16_gather(uint8_t *d, const uint8_t *s,
                                                             int64_t rd, int64_t ss) {
    const __m512i idx = _mm512_mullo_epi32(
        _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        _mm512_set1_epi32((int)ss));
    for (int r = 0; r < TRANSPOSE_TILE; r++)
        _mm512_storeu_si512((void *)(d + r * rd),
                            _mm512_i32gather_epi32(idx, (const void *)(s + r * 4), 1));
}

/* Whether tile16_gather applies: AVX-512 host, 4-byte elements, contiguous destination
 * rows and source offsets that fit the gather's 32-bit indices. */
static bool tile16_ok(int64_t ds, int64_t ss, unsigned esize) {
    return esize == 4 && ds == 4 && ss > 0 && ss <= INT32_MAX / TRANSPOSE_TILE &&
           rt_host_has(RT_HOST_AVX512);
}
#endif

/* One tile of a transposing copy (see copy_transposed). */
static void copy_tile(uint8_t *d, const uint8_t *s, uint64_t nr, int64_t rd, int64_t rs,
                      int64_t len, int64_t ds, int64_t ss, unsigned esize) {
#if defined(__x86_64__) && defined(__GNUC__)
    if (nr == TRANSPOSE_TILE && len == TRANSPOSE_TILE && tile16_ok(ds, ss, esize)) {
        tile16_gather(d, s, rd, ss);
        return;
    }
#endif
    switch (esize) {
    case 1: COPY_TILE(1); break;
    case 2: COPY_TILE(2); break;
    case 4: COPY_TILE(4); break;
    default: COPY_TILE(8); break;
    }
}

/* A block whose inner source stride is long while its row stride is one element (a
 * transposed read, such as a weight read through a transposed view): copied tile by
 * tile, so that each cache line read is used for a whole tile instead of once per row. */
static void copy_transposed(uint8_t *d, const uint8_t *s, uint64_t nr, int64_t rd, int64_t rs,
                            int64_t len, int64_t ds, int64_t ss, unsigned esize) {
    for (uint64_t r0 = 0; r0 < nr; r0 += TRANSPOSE_TILE) {
        uint64_t tr = nr - r0 < TRANSPOSE_TILE ? nr - r0 : TRANSPOSE_TILE;
        for (int64_t i0 = 0; i0 < len; i0 += TRANSPOSE_TILE) {
            int64_t ti = len - i0 < TRANSPOSE_TILE ? len - i0 : TRANSPOSE_TILE;
            copy_tile(d + (int64_t)r0 * rd + i0 * ds, s + (int64_t)r0 * rs + i0 * ss, tr, rd,
                      rs, ti, ds, ss, esize);
        }
    }
}

/* Copies rows of exactly N bytes (a constant after inlining): rows r < nr at byte
 * strides rd / rs. */
#define COPY_ROWS_N(N)                                                                   \
    for (uint64_t r = 0; r < nr; r++)                                                    \
        memcpy(d + (int64_t)r * rd, s + (int64_t)r * rs, N)

/* The two innermost dims of a plan: nr rows (byte strides rd / rs) of len elements
 * (byte strides ds / ss). Short contiguous rows (a window of a few elements) are
 * copied with fixed-size moves. */
static void copy_block(uint8_t *d, const uint8_t *s, uint64_t nr, int64_t rd, int64_t rs,
                       int64_t len, int64_t ds, int64_t ss, unsigned esize) {
    size_t nb = (size_t)len * esize;
    if (ss == (int64_t)esize && ds == (int64_t)esize && nb <= 32) {
        switch (nb) {
        case 4: COPY_ROWS_N(4); return;
        case 8: COPY_ROWS_N(8); return;
        case 12: COPY_ROWS_N(12); return;
        case 16: COPY_ROWS_N(16); return;
        case 20: COPY_ROWS_N(20); return;
        case 24: COPY_ROWS_N(24); return;
        case 28: COPY_ROWS_N(28); return;
        case 32: COPY_ROWS_N(32); return;
        default: break;
        }
    }
    if (rs == (int64_t)esize && ss != (int64_t)esize && nr >= TRANSPOSE_TILE &&
        len >= TRANSPOSE_TILE) {
        copy_transposed(d, s, nr, rd, rs, len, ds, ss, esize);
        return;
    }
    for (uint64_t r = 0; r < nr; r++)
        copy_row(d + (int64_t)r * rd, s + (int64_t)r * rs, len, ds, ss, esize);
}

/* Runs a copy plan from s to d (odometer over the dims outside the innermost two). */
static void run_copy(const CopyPlan *p, uint8_t *d, const uint8_t *s, unsigned esize) {
    int in = p->n - 1;
    if (in == 0) {
        copy_row(d, s, (int64_t)p->dim[0], p->ds[0], p->ss[0], esize);
        return;
    }
    int mid = in - 1;
    uint64_t idx[ISA_MAX_DIMS] = {0};
    for (;;) {
        copy_block(d, s, p->dim[mid], p->ds[mid], p->ss[mid], (int64_t)p->dim[in], p->ds[in],
                   p->ss[in], esize);
        int k = mid - 1;
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
    CopyPlan p;
    if (store) {
        if (plan_copy(&p, x->dims, x->lx_stride, x->dram_stride, x->esize))
            run_copy(&p, dr, lx, x->esize);
    } else {
        if (plan_copy(&p, x->dims, x->dram_stride, x->lx_stride, x->esize))
            run_copy(&p, lx, dr, x->esize);
    }
}

/* Executes a verified GATHER; returns RT_XERR_INDEX (value in c) on a bad index. */
int rt_gather(RtCore *c, const SpyGather *g) {
    const uint8_t *tab = c->seg[g->seg] + g->dram_off;
    const uint8_t *idx = c->lx + g->lx_idx;
    uint8_t *dst = c->lx + g->lx_dst;
    size_t row_bytes = (size_t)g->row_elems * g->esize;
    int64_t ds = (int64_t)g->dst_row_stride * g->esize;
    for (uint32_t j = 0; j < g->nidx; j++) {
        int32_t i;
        memcpy(&i, idx + 4 * (size_t)j, 4);
        int64_t r = i < 0 ? (int64_t)i + g->bound : i;
        if (r < 0 || r >= (int64_t)g->bound) {
            c->err_value = i;
            return RT_XERR_INDEX;
        }
        int64_t off = r * g->row_stride; /* verified in range for r < bound */
        memmove(dst + j * ds, tab + off * g->esize, row_bytes);
    }
    return RT_XOK;
}
