/* cg_lxspan.c: sets of LX bytes (CgSpan) for the load cache: the bytes an emitted
 * instruction writes, computed from its own fields, the bytes a cached load holds, and
 * whether two such sets share a byte. cg_push hands every instruction's written set to
 * the cache (cg_cache_invalidate), so that every LX write, whatever lowering emitted
 * it (LOAD, GATHER, MATMUL, VEC, VREDUCE, VFILL, VSCAN), forgets the cached loads it
 * overlaps: one rule in one place instead of a call after each in-place write. The
 * overlap is exact for strided sets (the interleaved pieces of a shared tile loaded
 * with a row pitch share no byte, although their bounding ranges do), so that a write
 * never forgets a load it does not touch.
 */
#include "cg_internal.h"

#define SPAN_RUNS_MAX 4096           /* runs of one set compared one by one; beyond this
                                        the bounding ranges decide (conservative) */

/* Bytes of one LX element of device dtype dt (isa.h: sub-byte and 8-bit types take
 * one byte). */
int64_t cg_dev_bytes(int dt)
{
    switch (dt) {
    case ISA_DT_F32: case ISA_DT_I32: return 4;
    case ISA_DT_I16: case ISA_DT_F16: case ISA_DT_BF16: case ISA_DT_DLF16: return 2;
    default: return 1;
    }
}

/* Append dim (len, stride bytes) to s's outer dims, merged into the run or the
 * previous dim when contiguous with it. */
static void span_push(CgSpan *s, int64_t len, int64_t stride)
{
    if (len == 1 || stride == 0)
        return;
    IR_ASSERT(s->n < CG_DIMS_MAX && stride > 0);
    s->len[s->n] = len;
    s->stride[s->n] = stride;
    s->n++;
}

/* Fold contiguous dims: innermost into the run, neighbours into one dim. */
static void span_fold(CgSpan *s)
{
    while (s->n > 0 && s->stride[s->n - 1] == s->width) {
        s->width *= s->len[s->n - 1];
        s->n--;
    }
    int k = 0;
    for (int i = 0; i < s->n; i++) {
        if (k > 0 && s->stride[k - 1] == s->stride[i] * s->len[i]) {
            s->len[k - 1] *= s->len[i];
            s->stride[k - 1] = s->stride[i];
            continue;
        }
        s->len[k] = s->len[i], s->stride[k] = s->stride[i], k++;
    }
    s->n = k;
    s->ext = s->width;
    for (int i = 0; i < s->n; i++)
        s->ext += (s->len[i] - 1) * s->stride[i];
}

void cg_span_make(CgSpan *s, int64_t lo, unsigned es, int n, const int64_t *len,
                  const int64_t *ls)
{
    s->lo = lo;                            /* the dims past n are never read: not */
    s->width = es;                         /* cleared (the guard pass makes millions) */
    s->ext = 0;
    s->n = 0;
    for (int i = 0; i < n; i++) {
        if (len[i] <= 0) {
            s->width = 0;                      /* empty */
            s->n = 0;
            return;
        }
        span_push(s, len[i], (ls[i] < 0 ? -ls[i] : ls[i]) * (int64_t)es);
    }
    span_fold(s);
}

/* rows rows of cols elements of es bytes at lx, row stride rs (elements). */
static void span_rows(CgSpan *s, uint32_t lx, int64_t rows, int64_t rs, int64_t cols,
                      int64_t es)
{
    int64_t len[2] = {rows, cols}, ls[2] = {rs, 1};
    cg_span_make(s, lx, (unsigned)es, 2, len, ls);
}

bool cg_insn_lx_write(const SpyInsn *in, CgSpan *s)
{
    const SpyDma *d = &in->dma;
    int64_t len[ISA_MAX_DIMS], ls[ISA_MAX_DIMS];
    switch (in->opcode) {
    case ISA_LOAD:
        for (int i = 0; i < ISA_MAX_DIMS; i++)
            len[i] = d->dims[i], ls[i] = d->lx_stride[i];
        cg_span_make(s, d->lx, d->esize, ISA_MAX_DIMS, len, ls);
        return true;
    case ISA_GATHER:
        span_rows(s, in->gather.lx_dst, in->gather.nidx, in->gather.dst_row_stride,
                  in->gather.row_elems, in->gather.esize);
        return true;
    case ISA_MATMUL:
        span_rows(s, in->mm.c, in->mm.m, in->mm.ldc, in->mm.n, cg_dev_bytes(in->mm.out_dtype));
        return true;
    case ISA_VEC:
        span_rows(s, in->vec.dst, in->vec.rows, in->vec.dst_rs, in->vec.cols,
                  cg_dev_bytes(in->vec.dtype));
        return true;
    case ISA_VREDUCE: {
        bool arg = in->red.fn == ISA_RF_ARGMAX || in->red.fn == ISA_RF_ARGMIN;
        span_rows(s, in->red.dst, in->red.rows, in->red.dst_rs, 1,
                  arg ? 4 : cg_dev_bytes(in->red.dtype));
        return true;
    }
    case ISA_VFILL:
        span_rows(s, in->fill.dst, 1, 0, in->fill.n, cg_dev_bytes(in->fill.dtype));
        return true;
    case ISA_VSCAN:
        span_rows(s, in->scan.dst, in->scan.rows, in->scan.dst_rs, in->scan.len,
                  cg_dev_bytes(in->scan.dtype));
        return true;
    default:                                   /* STORE, SCATTER, BARRIER: no LX write */
        return false;
    }
}

/* Floor of a / b, b > 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}

/* Bounding bytes of s's dims from k on (the run included). */
static int64_t ext_from(const CgSpan *s, int k)
{
    int64_t e = s->width;
    for (int i = k; i < s->n; i++)
        e += (s->len[i] - 1) * s->stride[i];
    return e;
}

/* Whether the part of s of dims k.. placed at base holds a byte of [x, x + w): only
 * the indices of dim k whose sub-block reaches into the interval are visited; each
 * run visited costs one of *budget (none left: true, conservatively). */
static bool hits(const CgSpan *s, int k, int64_t base, int64_t x, int64_t w, int64_t *budget)
{
    if (k == s->n)
        return --*budget < 0 || (base < x + w && x < base + s->width);
    int64_t e = ext_from(s, k + 1), st = s->stride[k];
    int64_t i0 = floor_div(x - e - base, st) + 1, i1 = floor_div(x + w - base - 1, st);
    i0 = i0 < 0 ? 0 : i0;
    i1 = i1 > s->len[k] - 1 ? s->len[k] - 1 : i1;
    for (int64_t i = i0; i <= i1; i++)
        if (hits(s, k + 1, base + i * st, x, w, budget))
            return true;
    return false;
}

/* Whether a run of a's dims k.. placed at base meets b; *budget counts runs tried
 * (none left: true, conservatively). */
static bool runs_hit(const CgSpan *a, int k, int64_t base, const CgSpan *b, int64_t *budget)
{
    if (base >= b->lo + b->ext || b->lo >= base + ext_from(a, k))
        return false;                          /* this block lies outside b's range */
    if (k == a->n)
        return --*budget < 0 || hits(b, 0, b->lo, base, a->width, budget);
    for (int64_t i = 0; i < a->len[k]; i++)
        if (runs_hit(a, k + 1, base + i * a->stride[k], b, budget))
            return true;
    return false;
}

bool cg_span_overlap(const CgSpan *a, const CgSpan *b)
{
    if (a->width == 0 || b->width == 0 || a->lo >= b->lo + b->ext || b->lo >= a->lo + a->ext)
        return false;
    int64_t budget = SPAN_RUNS_MAX;
    return runs_hit(a, 0, a->lo, b, &budget);
}
