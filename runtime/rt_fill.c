/* rt_fill.c: a VFILL whose bytes the LOADs right after it mostly rewrite (the zero
 * padding around a convolution's input patch: the whole patch is filled, then its
 * interior is loaded) fills only the bytes those LOADs leave. The LOADs still run
 * after it, unchanged (or are deferred: rt_defer.c carries a view out before anything
 * reads its bytes), so when the next instruction after them runs, every byte of the
 * fill holds what the full fill and the LOADs would have left. Taken for fills whose
 * value is the same in every byte (zero), where a gap may start or end anywhere, and
 * for other values (a max pool's -inf padding) where the gaps are whole elements; and
 * for LOADs whose runs of LX bytes are in increasing address order and disjoint
 * (checked here); anything else fills in full. Which of these applies
 * depends on the code alone and is planned at load (rt_vfill_prep, the VFILL's RtPrep).
 * Modelled time is computed from the bundle and does not change.
 */
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

#define RT_GAP_LOADS 16      /* LOADs after a VFILL looked at */
#define RT_GAP_MIN 4096      /* fill bytes from which gaps are worth finding */
#define RT_GAP_L1 16384      /* fill bytes up to which a fill of many short gaps */
#define RT_GAP_RUN 320       /* (fewer bytes than this a gap) runs in full instead */

/* The LX side of a LOAD as ordered disjoint runs: up to two outer dims (dim[0],
 * dim[1], byte strides st[0], st[1]) of runs of len contiguous bytes at lo. */
typedef struct {
    uint64_t lo, len, hi;
    uint64_t dim[2];
    int64_t st[2];
} GapLoad;

/* Describes LOAD x's LX bytes as g; false when they are not runs in increasing order
 * (a converting LOAD, more than three dims once merged, a non-contiguous innermost
 * dim, or an inner dim reaching past the next outer stride). */
static bool gap_load(const SpyDma *x, GapLoad *g) {
    RtCopyPlan p;
    if ((x->flags & ISA_F_F32) || !rt_plan_copy(&p, x->dims, x->lx_stride, x->lx_stride,
                                                 x->esize))
        return false;
    int in = p.n - 1;
    if (p.n > 3 || p.ds[in] != (int64_t)x->esize)
        return false;
    *g = (GapLoad){.lo = x->lx, .len = p.dim[in] * x->esize, .dim = {1, 1}, .st = {0, 0}};
    uint64_t ext = g->len;                /* bytes from a run's start to the last end */
    for (int d = in - 1, o = 1; d >= 0; d--, o--) {
        if (p.ds[d] <= 0 || ext > (uint64_t)p.ds[d])
            return false;
        g->dim[o] = p.dim[d];
        g->st[o] = p.ds[d];
        ext += (p.dim[d] - 1) * (uint64_t)p.ds[d];
    }
    g->hi = g->lo + ext;
    return true;
}

/* The fill value of f as 8 bytes of its pattern (an element of es bytes repeated);
 * *uniform when all its bytes are the same. */
static uint64_t fill_word(const SpyVFill *f, unsigned es, bool *uniform) {
    uint64_t w = 0;
    for (unsigned b = 0; b < 8; b++)
        w |= (uint64_t)((f->value >> (8 * (b % es))) & 0xff) << (8 * b);
    *uniform = w == 0x0101010101010101ull * (w & 0xff);
    return w;
}

/* Sets LX bytes [a, b) of core c to the pattern w (8 bytes; when not one byte
 * repeated, a and b are whole elements from an element boundary: its phase holds at
 * every multiple of 8 bytes and at b - 8), nothing when b <= a. Gaps are mostly the
 * few bytes of padding between the rows of a patch: those are written inline, 8 bytes
 * at a time (the last move overlapping the one before), not by a call. */
static inline void gap(RtCore *c, uint64_t a, uint64_t b, uint64_t w, bool uniform) {
    if (b <= a)
        return;
    uint8_t *p = c->lx + a;
    size_t n = (size_t)(b - a);
    if (n > 64 && uniform) {
        memset(p, (int)(w & 0xff), n);
    } else if (n >= 8) {
        for (size_t i = 0; i + 8 < n; i += 8)
            memcpy(p + i, &w, 8);
        memcpy(p + n - 8, &w, 8);
    } else if (n >= 4) {
        memcpy(p, &w, 4);
        memcpy(p + n - 4, &w, 4);
    } else {
        for (size_t i = 0; i < n; i++)
            p[i] = (uint8_t)(w >> (8 * i));
    }
}

/* Whether every run of the LOADs g[0..k) starts and ends on a whole element of es
 * bytes from the fill's start lo (a fill value of several bytes: gaps of whole
 * elements). */
static bool gaps_whole(const GapLoad *g, uint32_t k, uint64_t lo, unsigned es) {
    for (uint32_t j = 0; j < k; j++)
        if ((g[j].lo - lo) % es || g[j].len % es || (uint64_t)g[j].st[0] % es ||
            (uint64_t)g[j].st[1] % es)
            return false;
    return true;
}

/* How VFILL f, followed in the program by the n instructions at next, is carried out:
 * RT_PH_GAPS (only the bytes the LOADs g[0..*k) at the start of next leave, the
 * pattern *w), RT_PH_FILL0 (a small patch of short rows and a value of one byte
 * repeated: one memset of its bytes costs less than a store per gap) or RT_PH_NONE (in
 * full, rt_vfill). A value of several different bytes (a pad's -inf) takes the gaps
 * only when they are whole elements (gaps_whole). Depends on the code alone, so
 * rt_prep.c plans it once at load. */
static uint8_t gap_plan(const SpyVFill *f, const SpyInsn *next, uint32_t n, GapLoad *g,
                        uint32_t *k, uint64_t *w) {
    unsigned es = rt_dtype_size(f->dtype);
    uint64_t lo = f->dst, hi = f->dst + (uint64_t)f->n * es;
    bool uniform;
    if (es == 0 || es > 4 || hi - lo < RT_GAP_MIN)
        return RT_PH_NONE;
    *w = fill_word(f, es, &uniform);
    uint32_t nl = 0;                      /* LOADs whose bytes are runs in order */
    for (uint64_t end = lo; nl < n && nl < RT_GAP_LOADS && next[nl].opcode == ISA_LOAD; nl++) {
        if (!gap_load(&next[nl].dma, &g[nl]) || g[nl].lo < end || g[nl].hi > hi)
            break;
        end = g[nl].hi;
    }
    *k = nl;
    if (nl == 0 || (!uniform && !gaps_whole(g, nl, lo, es)))
        return RT_PH_NONE;
    uint64_t runs = 1;                    /* gaps: one before each run, one at the end */
    for (uint32_t j = 0; j < nl; j++)
        runs += g[j].dim[0] * g[j].dim[1];
    if (uniform && hi - lo <= RT_GAP_L1 && hi - lo < RT_GAP_RUN * runs)
        return RT_PH_FILL0; /* tiny_cnn's 7 KiB patches of 128-byte rows */
    return RT_PH_GAPS;
}

/* The plan of VFILL code[0] (n: instructions to the program's end), see gap_plan. */
uint8_t rt_vfill_prep(const SpyInsn *code, uint32_t n) {
    GapLoad g[RT_GAP_LOADS];
    uint32_t k;
    uint64_t w;
    return gap_plan(&code[0].fill, code + 1, n - 1, g, &k, &w);
}

/* Runs VFILL f, followed in the program by the n instructions at next, by its plan
 * how (rt_vfill_prep): one memset (RT_PH_FILL0), only the bytes the LOADs at the
 * start of next do not rewrite (RT_PH_GAPS: found again from those LOADs), or in full. */
void rt_vfill_planned(RtCore *c, const SpyVFill *f, const SpyInsn *next, uint32_t n,
                      uint8_t how) {
    uint64_t lo = f->dst, hi = f->dst + (uint64_t)f->n * rt_dtype_size(f->dtype);
    if (how == RT_PH_FILL0) {             /* every byte of the value is its low byte */
        memset(c->lx + lo, (int)(f->value & 0xff), (size_t)(hi - lo));
        return;
    }
    GapLoad g[RT_GAP_LOADS];
    uint32_t k;
    uint64_t w;
    if (how != RT_PH_GAPS || gap_plan(f, next, n, g, &k, &w) != RT_PH_GAPS) {
        rt_vfill(c, f);
        return;
    }
    bool uniform = w == 0x0101010101010101ull * (w & 0xff);
    uint64_t at = lo;
    for (uint32_t j = 0; j < k; j++)
        for (uint64_t a = 0; a < g[j].dim[0]; a++)
            for (uint64_t r = 0; r < g[j].dim[1]; r++) {
                uint64_t s = g[j].lo + a * (uint64_t)g[j].st[0] + r * (uint64_t)g[j].st[1];
                gap(c, at, s, w, uniform);
                at = s + g[j].len;
            }
    gap(c, at, hi, w, uniform);
}
