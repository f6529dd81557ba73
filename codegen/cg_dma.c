/* cg_dma.c: logical N-d DMAs -> ISA LOAD/STORE instructions.
 *
 * A logical DMA lists (extent, DRAM stride, LX stride) per dim, outermost first, from
 * the access of a value (strides come from its view, i.e. from its layout; 0 for
 * broadcast, negative for reversed slices). Extent-1 dims are dropped and neighbours
 * contiguous on both sides are merged; what still has more than ISA_MAX_DIMS dims,
 * a stride outside int32, or spans more than the core's DRAM window is split by
 * looping over its outermost dim.
 */
#include <string.h>

#include "cg_internal.h"

void cg_dims_add(CgDims *d, int64_t len, int64_t ds, int64_t ls)
{
    IR_ASSERT(d->n < CG_DIMS_MAX);
    d->len[d->n] = len;
    d->ds[d->n] = ds;
    d->ls[d->n] = ls;
    d->n++;
}

void cg_dims_dense_lx(CgDims *d)
{
    int64_t s = 1;
    for (int i = d->n - 1; i >= 0; i--) {
        d->ls[i] = s;
        s *= d->len[i];
    }
}

/* Drop extent-1 dims and merge contiguous neighbours. False if some extent is 0. */
static bool coalesce(const CgDims *in, CgDims *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < in->n; i++) {
        if (in->len[i] == 0)
            return false;
        if (in->len[i] == 1)
            continue;
        int k = out->n - 1;
        if (k >= 0 && out->ds[k] == in->ds[i] * in->len[i] &&
            out->ls[k] == in->ls[i] * in->len[i]) {
            out->len[k] *= in->len[i];
            out->ds[k] = in->ds[i];
            out->ls[k] = in->ls[i];
            continue;
        }
        cg_dims_add(out, in->len[i], in->ds[i], in->ls[i]);
    }
    return true;
}

/* True if dims [k, n) of d fit one instruction (dims, int32 strides, DRAM window). */
static bool fits_one(const CgEmit *e, const CgDims *d, int k, unsigned esize)
{
    if (d->n - k > ISA_MAX_DIMS)
        return false;
    uint64_t span = esize;
    for (int i = k; i < d->n; i++) {
        if (d->ds[i] < INT32_MIN || d->ds[i] > INT32_MAX || d->ls[i] < INT32_MIN ||
            d->ls[i] > INT32_MAX)
            return false;
        uint64_t a = (uint64_t)(d->ds[i] < 0 ? -d->ds[i] : d->ds[i]);
        span += (uint64_t)(d->len[i] - 1) * a * esize;
    }
    return span <= ((uint64_t)e->t->core_window_mib << 20);
}

/* Whether a LOAD from or STORE to segment seg converts (ISA_F_F32): seg is a float32
 * graph input that every LOAD converts to DLFloat16 (CgEmit.in_f32), or the STORE
 * widens a DLFloat16 tile into a float32 output (CgEmit.store_f32). Such accesses are
 * computed like those of the DLFloat16 data (offsets in 2-byte elements from the
 * segment's start); the DRAM offset doubles when the instruction is emitted. */
static bool seg_f32(const CgEmit *e, uint8_t op, uint32_t seg)
{
    if (op == ISA_STORE)
        return e->store_f32;
    return e->in_f32 && seg >= ISA_SEG_IO0 && seg - ISA_SEG_IO0 < e->g->ninputs &&
           e->in_f32[seg - ISA_SEG_IO0];
}

/* Emit dims [k, n) of d at (off, lx), looping over dim k when they do not fit. */
static void emit_from(CgEmit *e, uint8_t op, uint32_t seg, int64_t off, int64_t lx,
                      unsigned esize, const CgDims *d, int k)
{
    bool cvt = seg_f32(e, op, seg);
    if (fits_one(e, d, k, cvt ? 4 : esize)) {
        SpyInsn in;
        memset(&in, 0, sizeof in);
        SpyDma *m = &in.dma;
        m->opcode = op;
        m->esize = (uint8_t)esize;
        m->seg = seg;
        m->dram_off = off;
        if (op == ISA_LOAD)
            m->flags = e->load_flags;
        if (cvt) {
            IR_ASSERT(esize == 2);
            m->flags |= ISA_F_F32;
            m->dram_off = 2 * off;
        }
        IR_ASSERT(lx >= 0 && lx <= UINT32_MAX);
        m->lx = (uint32_t)lx;
        m->ndim = (uint8_t)(d->n - k);
        for (int i = 0; i < ISA_MAX_DIMS; i++)
            m->dims[i] = 1;
        for (int i = k; i < d->n; i++) {
            m->dims[i - k] = (uint32_t)d->len[i];
            m->dram_stride[i - k] = (int32_t)d->ds[i];
            m->lx_stride[i - k] = (int32_t)d->ls[i];
        }
        cg_push(e, &in);
        return;
    }
    IR_ASSERT(k < d->n);
    for (int64_t i = 0; i < d->len[k]; i++)
        emit_from(e, op, seg, off + i * d->ds[k] * (int64_t)esize,
                  lx + i * d->ls[k] * (int64_t)esize, esize, d, k + 1);
}

void cg_dma(CgEmit *e, uint8_t op, uint32_t seg, int64_t off, uint32_t lx, unsigned esize,
            const CgDims *d)
{
    CgDims c;
    IR_ASSERT(esize == 1 || esize == 2 || esize == 4 || esize == 8);
    IR_ASSERT(op != ISA_STORE || seg == ISA_SEG_ARENA || seg >= ISA_SEG_IO0 + e->g->ninputs);
    if (!coalesce(d, &c))
        return;
    emit_from(e, op, seg, off, lx, esize, &c, 0);
}

/* Whether cached entry c describes exactly this load. */
static bool same_load(const CgCached *c, uint32_t seg, int64_t off, unsigned esize,
                      const CgDims *d)
{
    if (!c->valid || c->seg != seg || c->off != off || c->esize != esize || c->d.n != d->n)
        return false;
    for (int i = 0; i < d->n; i++)
        if (c->d.len[i] != d->len[i] || c->d.ds[i] != d->ds[i] || c->d.ls[i] != d->ls[i])
            return false;
    return true;
}

void cg_load_cached(CgEmit *e, uint32_t seg, int64_t off, uint32_t lx, unsigned esize,
                    const CgDims *d)
{
    CgDims c;
    if (!coalesce(d, &c))
        return;
    for (int i = 0; i < CG_CACHE_MAX; i++)
        if (same_load(&e->cache[i], seg, off, esize, &c) && e->cache[i].lx == lx)
            return;
    emit_from(e, ISA_LOAD, seg, off, lx, esize, &c, 0);
    CgCached *ent = &e->cache[e->next_cache];
    e->next_cache = (e->next_cache + 1) % CG_CACHE_MAX;
    *ent = (CgCached){true, lx, seg, off, esize, c, {0}};
    cg_span_make(&ent->held, lx, esize, c.n, c.len, c.ls);
}

void cg_cache_invalidate(CgEmit *e, const CgSpan *w)
{
    for (int i = 0; i < CG_CACHE_MAX; i++) {
        CgCached *c = &e->cache[i];
        if (c->valid && cg_span_overlap(&c->held, w))
            c->valid = false;
    }
}

void cg_cache_reset(CgEmit *e)
{
    memset(e->cache, 0, sizeof e->cache);
    e->next_cache = 0;
    e->patch.valid = false;
}
