/* rt_defer.c: deferred LOADs. A LOAD of whole rows (at most two dims once unit dims
 * are dropped and contiguous ones merged, contiguous innermost on both sides) is not
 * copied when it runs: the core remembers it as a view of DRAM. A MATMUL whose A or B
 * operand lies inside one view, row for row, reads it straight from DRAM (the same
 * bits the copy would have put in LX, without writing and re-reading a copy of every
 * weight); so does the window B of an implicit-GEMM convolution that reads at most
 * half of each row of a view of one row per input channel (a strided 1 x 1 window:
 * rt_defer_window). Every other access to the LX bytes of a view, and every STORE or SCATTER
 * that could write its DRAM source, first carries out the LOAD (rt_dma, the
 * documented copy); a LOAD writing over a view does so too unless it rewrites every
 * byte of it. A LOAD whose rows continue a pending view's, in LX and in DRAM, joins
 * it (tiles loaded in pieces over the ring), so that an operand spanning the pieces is
 * read from DRAM too. At the end of a program the views still pending are dropped: LX is
 * undefined at the start of the next one (isa.md), so no instruction can see the
 * difference. Modelled time is computed from the bundle and does not change.
 */
#include <stddef.h>
#include <string.h>

#include "rt_copy.h"
#include "rt_exec.h"
#include "rt_model.h"

/* Byte span [lo, hi) relative to a base of a 2-d access (any stride signs); lo = hi =
 * 0 when empty. */
void rt_span2(uint64_t rows, int64_t rs, uint64_t cols, int64_t cs, unsigned es,
              int64_t *lo, int64_t *hi) {
    *lo = *hi = 0;
    if (!rows || !cols)
        return;
    int64_t r = (int64_t)(rows - 1) * rs, c = (int64_t)(cols - 1) * cs;
    *lo = ((r < 0 ? r : 0) + (c < 0 ? c : 0)) * es;
    *hi = ((r > 0 ? r : 0) + (c > 0 ? c : 0) + 1) * es;
}

/* Byte span [lo, hi) relative to its base of the LX (lx = true) or DRAM side of a
 * LOAD or STORE (with ISA_F_F32 an element is 4 bytes in DRAM, 2 in LX). */
void rt_dma_span(const SpyDma *x, bool lx, int64_t *lo, int64_t *hi) {
    int64_t mn = 0, mx = 0;
    int64_t es = !lx && (x->flags & ISA_F_F32) ? 4 : x->esize;  /* float32 in DRAM */
    for (int i = 0; i < ISA_MAX_DIMS; i++) {
        int64_t e = (int64_t)(x->dims[i] - 1) * (lx ? x->lx_stride[i] : x->dram_stride[i]);
        if (!x->dims[i]) {
            *lo = *hi = 0;
            return;
        }
        mn += e < 0 ? e : 0;
        mx += e > 0 ? e : 0;
    }
    *lo = mn * es;
    *hi = (mx + 1) * es;
}

/* Carries out the LOAD of view i (a transpose: by rt_dma; else its rows, copied as they
 * stand, the LOAD's or those of a joined view) and removes it. */
static void flush_one(RtCore *c, RtDefer *d, int i) {
    const RtView *v = &d->v[i];
    if (v->t && v->x)
        rt_dma(c, v->x, false);
    else if (v->t)                   /* joined transposes: element by element */
        for (uint64_t r = 0; r < v->rows; r++)
            for (uint64_t j = 0; j < v->rowb / 4; j++)
                memcpy(c->lx + v->lo + r * v->lrs + 4 * j,
                       v->src + (int64_t)r * v->drs + (int64_t)j * v->dcs, 4);
    else                             /* the rows of the view are the LOAD's */
        rt_copy_rows(c->lx + v->lo, (int64_t)v->lrs, v->src, v->drs, v->rows, v->rowb);
    d->v[i] = d->v[--d->n];
}

/* Carries out every view whose LX bytes intersect [lo, hi) of LX. */
static void flush_lx(RtCore *c, RtDefer *d, int64_t lo, int64_t hi) {
    for (int i = d->n - 1; i >= 0; i--)
        if (lo < hi && lo < (int64_t)d->v[i].hi && (int64_t)d->v[i].lo < hi)
            flush_one(c, d, i);
}

/* Carries out every pending view. */
static void flush_all(RtCore *c, RtDefer *d) {
    while (d->n)
        flush_one(c, d, d->n - 1);
}

/* Carries out the views an access of rows x cols elements of es bytes at LX byte a,
 * strides rs / cs (elements), may touch. */
static void flush_2d(RtCore *c, RtDefer *d, uint32_t a, uint64_t rows, int64_t rs,
                     uint64_t cols, int64_t cs, unsigned es) {
    int64_t lo, hi;
    rt_span2(rows, rs, cols, cs, es, &lo, &hi);
    flush_lx(c, d, (int64_t)a + lo, (int64_t)a + hi);
}

/* The dims of a LOAD with unit dims dropped and dims contiguous on both sides merged
 * (outermost first, strides in elements): their number, or -1 when more than max (at
 * most 3). */
static int load_dims(const SpyDma *x, int max, uint64_t *dim, int64_t *ds, int64_t *ls) {
    int n = 0;
    for (int i = 0; i < ISA_MAX_DIMS; i++) {
        if (x->dims[i] == 1)
            continue;
        if (n && ds[n - 1] == (int64_t)x->dram_stride[i] * x->dims[i] &&
            ls[n - 1] == (int64_t)x->lx_stride[i] * x->dims[i]) {
            dim[n - 1] *= x->dims[i];
            ds[n - 1] = x->dram_stride[i];
            ls[n - 1] = x->lx_stride[i];
            continue;
        }
        if (n == max)
            return -1;
        dim[n] = x->dims[i], ds[n] = x->dram_stride[i], ls[n] = x->lx_stride[i];
        n++;
    }
    return n;
}

/* The view of a LOAD: rows contiguous on both sides, or a transpose of 4-byte
 * elements (LX rows contiguous, DRAM columns contiguous); false for other LOADs. Its
 * DRAM addresses are left to load_view: src NULL, shi - src in *span. */
static bool view_shape(const SpyDma *x, RtView *w, uint64_t *span) {
    uint64_t dim[2] = {1, 1};
    int64_t ds[2] = {1, 1}, ls[2] = {1, 1};
    int n = load_dims(x, 2, dim, ds, ls);
    unsigned es = x->esize;
    if (x->flags & ISA_F_F32)
        return false;                     /* a converting LOAD: DRAM holds other bits */
    if (n < 0 || (n >= 1 && ls[n - 1] != 1))
        return false;
    *w = (RtView){.x = x, .rows = n == 2 ? dim[0] : 1, .rowb = (n ? dim[n - 1] : 1) * es,
                  .src = NULL, .lo = x->lx, .seg = x->seg};
    if (n == 2) {
        w->lrs = (uint64_t)ls[0] * es;
        if (ls[0] < 0 || w->lrs < w->rowb)
            return false;                 /* rows overlap in LX */
    }
    if (ds[n ? n - 1 : 0] == 1 && (n < 2 || ds[0] >= 0)) {
        w->drs = n == 2 ? ds[0] * es : 0;
        *span = (w->rows - 1) * (uint64_t)w->drs + w->rowb;
    } else if (n == 2 && ds[0] == 1 && ds[1] > 0 && es == 4) {
        w->t = true;
        w->drs = es, w->dcs = ds[1] * es;
        *span = (w->rows - 1) * es + (dim[1] - 1) * (uint64_t)w->dcs + es;
    } else {
        return false;
    }
    w->hi = w->lo + (w->rows - 1) * w->lrs + w->rowb;
    return true;
}

/* The shape of a LOAD's view (view_shape) with its DRAM addresses in core c. */
static bool load_view(RtCore *c, const SpyDma *x, RtView *w) {
    uint64_t span;
    if (!view_shape(x, w, &span))
        return false;
    w->src = c->seg[x->seg] + x->dram_off;
    w->shi = w->src + span;
    return true;
}

/* Whether view w rewrites every LX byte of view v. */
static bool covers(const RtView *w, const RtView *v) {
    if (w->rows == 1 || w->lrs == w->rowb)
        return w->lo <= v->lo && v->hi <= w->hi;
    return w->lo == v->lo && w->rows >= v->rows && w->lrs == v->lrs && w->rowb >= v->rowb;
}

/* Joins transposed view b onto the end of transposed view a when b's columns continue
 * a's along each LX row and along DRAM (K^T of an attention head loaded in pieces of
 * tokens, one per core of the ring): the MATMUL then reads all of B^T from DRAM. */
static bool join_columns(RtView *a, const RtView *b) {
    if (!a->t || !b->t || a->rows != b->rows || a->lrs != b->lrs || a->drs != b->drs ||
        a->dcs != b->dcs || b->lo != a->lo + a->rowb || a->rowb + b->rowb > a->lrs ||
        b->src != a->src + (int64_t)(a->rowb / a->drs) * a->dcs)
        return false;
    a->rowb += b->rowb;
    a->hi = b->hi;
    a->shi = b->shi;
    a->x = NULL;
    return true;
}

/* Joins view b onto the end of view a when b's rows continue a's in LX and in DRAM
 * alike (a weight or an activation tile loaded in pieces, one per core of the ring):
 * a MATMUL operand over several pieces is then read from DRAM too. True when joined;
 * the joined view is carried out by its rows (x = NULL). */
static bool join_view(RtView *a, const RtView *b) {
    if (a->seg != b->seg)
        return false;
    if (a->t || b->t)
        return join_columns(a, b);
    if (a->rows == 1 && b->rows == 1) {
        if (b->lo != a->hi || b->src != a->shi)
            return false;
        a->rowb += b->rowb;
    } else {
        if (a->rows == 1 || b->rows == 1 || a->lrs != b->lrs || a->drs != b->drs ||
            a->rowb != b->rowb || b->lo != a->lo + a->rows * a->lrs ||
            b->src != a->src + (int64_t)a->rows * a->drs)
            return false;
        a->rows += b->rows;
    }
    a->hi = b->hi;
    a->shi = b->shi;
    a->x = NULL;
    return true;
}

/* Joins view w to a pending view it continues (or that continues it); true when
 * done. */
static bool join_pending(RtDefer *d, const RtView *w) {
    for (int i = 0; i < d->n; i++) {
        if (join_view(&d->v[i], w))
            return true;
        RtView t = *w;
        if (join_view(&t, &d->v[i])) {
            d->v[i] = t;
            return true;
        }
    }
    return false;
}

static bool window_rows(const RtView *v, const SpyMatmul *mm, unsigned es, bool whole,
                        uint64_t *r0, uint64_t *c0);

/* Whether deferring the LOAD code[0] would only cost: it writes only LX bytes that
 * the window MATMUL right after the run of LOADs it begins (at most RT_MAX_VIEWS * 4
 * instructions) reads in LX, so its view would be carried out there anyway (a
 * convolution's input patch with its padding), and not as a view the F32 window
 * kernels could read in DRAM (rt_defer_window). */
bool rt_defer_useless(const SpyInsn *code, uint32_t n) {
    uint32_t e = 1;
    while (e < n && e < RT_MAX_VIEWS * 4 && code[e].opcode == ISA_LOAD)
        e++;
    if (e >= n || code[e].opcode != ISA_MATMUL || !(code[e].mm.flags & ISA_F_BWIN))
        return false;
    const SpyMatmul *mm = &code[e].mm;
    unsigned es = mm->dtype == ISA_DT_F32 ? 4 : mm->dtype == ISA_DT_DLF16 ? 2 : 1;
    int64_t wlo, whi, lo, hi;
    rt_mm_win_range(mm, es, &wlo, &whi);
    rt_dma_span(&code[0].dma, true, &lo, &hi);
    lo += code[0].dma.lx, hi += code[0].dma.lx;
    RtView v;
    uint64_t span, r0, c0;
    if (mm->dtype == ISA_DT_F32 && view_shape(&code[0].dma, &v, &span) && !v.t &&
        (v.rows == 1 || window_rows(&v, mm, es, false, &r0, &c0)))
        return false;      /* the window may be read from its view (rt_defer_window) */
    return lo < hi && lo >= wlo * (int64_t)es && hi <= whi * (int64_t)es;
}

/* Whether view w rewrites every byte of the n rows of rowb bytes at LX byte lo, lrs
 * apart: w is contiguous over them, or has their pitch and spans them row for row. */
static bool rewrites_rows(const RtView *w, uint64_t lo, uint64_t n, uint64_t rowb,
                          uint64_t lrs) {
    if (lo < w->lo)
        return false;
    if (w->rows == 1 || w->lrs == w->rowb)
        return lo + (n - 1) * lrs + rowb <= w->hi;
    uint64_t q = (lo - w->lo) / lrs;
    return w->lrs == lrs && (lo - w->lo) % lrs + rowb <= w->rowb && q + n <= w->rows;
}

/* Cuts out of the pending view i (rows, not a transpose) the rows that view w writes
 * to, when w rewrites all of them: the rows before stay view i, those after become a
 * view of their own (a free slot needed when both remain). A tile loaded again in
 * pieces over an older one (the next k block of a product) then copies nothing of
 * the older tile, whose remaining rows the next pieces rewrite too. False: view i is
 * unchanged (the caller carries it out). */
static bool cut_rows(RtDefer *d, int i, const RtView *w) {
    RtView *v = &d->v[i];
    if (v->t || v->rows < 2 || w->hi <= v->lo || v->hi <= w->lo)
        return false;
    uint64_t r0 = w->lo > v->lo ? (w->lo - v->lo) / v->lrs : 0;
    if (v->lo + r0 * v->lrs + v->rowb <= w->lo)
        r0++;                        /* w starts in the gap after row r0 */
    uint64_t r1 = (w->hi - v->lo + v->lrs - 1) / v->lrs;
    r1 = r1 < v->rows ? r1 : v->rows;
    if (r0 >= r1 || !rewrites_rows(w, v->lo + r0 * v->lrs, r1 - r0, v->rowb, v->lrs) ||
        (r0 > 0 && r1 < v->rows && d->n == RT_MAX_VIEWS))
        return false;
    RtView t = *v;                   /* the rows after the cut */
    t.lo = v->lo + r1 * v->lrs, t.src = v->src + (int64_t)r1 * v->drs;
    t.rows = v->rows - r1, t.x = NULL;
    if (r0 > 0) {
        v->rows = r0, v->x = NULL;
        v->hi = v->lo + (r0 - 1) * v->lrs + v->rowb;
        v->shi = v->src + (int64_t)(r0 - 1) * v->drs + v->rowb;
        if (t.rows)
            d->v[d->n++] = t;
    } else if (t.rows) {
        *v = t;
    } else {
        d->v[i] = d->v[--d->n];
    }
    return true;
}

/* Joins the transposed view w (LX span [lo, hi)) to a pending one whose columns it
 * continues (join_columns): their spans interleave, row by row, but their bytes do
 * not meet, so that view is kept while the others w overlaps are carried out; true
 * when joined. */
static bool join_beside(RtCore *c, RtDefer *d, const RtView *w, int64_t lo, int64_t hi) {
    for (int i = 0; i < d->n; i++) {
        RtView a = d->v[i];
        if (!join_columns(&a, w))
            continue;
        d->v[i] = d->v[--d->n];      /* out of the list while the others are checked */
        flush_lx(c, d, lo, hi);
        d->v[d->n++] = a;
        return true;
    }
    return false;
}

/* Places the view w of a LOAD (view: w is one; else lo / hi is the LX span the LOAD
 * writes): drops the pending views it rewrites entirely, cuts out of those it partly
 * overwrites the rows it rewrites, carries out the rest that it overwrites, then joins
 * or keeps w when it moves at least RT_DEFER_MIN bytes and a slot is free. False: the
 * caller carries out the LOAD now. */
static bool place_view(RtCore *c, RtDefer *d, const RtView *w, bool view, int64_t lo,
                       int64_t hi) {
    bool keep = view && w->rows * w->rowb >= RT_DEFER_MIN;
    if (keep && w->t && d->n && join_beside(c, d, w, lo, hi))
        return true;
    if (d->n) {
        for (int i = d->n - 1; view && i >= 0; i--)
            if (d->v[i].lo < w->hi && w->lo < d->v[i].hi && covers(w, &d->v[i]))
                d->v[i] = d->v[--d->n];  /* rewritten entirely: never read again */
        for (int i = d->n - 1; view && i >= 0; i--)
            cut_rows(d, i, w);
        flush_lx(c, d, lo, hi);
    }
    if (keep && join_pending(d, w))
        return true;
    if (keep && d->n < RT_MAX_VIEWS) {
        d->v[d->n++] = *w;
        return true;
    }
    return false;
}

/* A LOAD of planes of whole rows (three dims once merged, rows contiguous on both
 * sides, at most RT_MAX_VIEWS planes: a pad's LOAD of two channels into a tile of its
 * own row pitch) placed as a view per plane (x NULL: carried out by its rows), each
 * plane place_view does not keep copied at once. False (nothing done): not such a
 * LOAD. */
static bool defer_planes(RtCore *c, RtDefer *d, const SpyDma *x) {
    uint64_t dim[3];
    int64_t ds[3], ls[3];
    unsigned es = x->esize;
    if ((x->flags & ISA_F_F32) || load_dims(x, 3, dim, ds, ls) != 3 || dim[0] > RT_MAX_VIEWS ||
        ds[2] != 1 || ls[2] != 1 || ds[1] < 0 || ls[1] < 0 || ls[0] < 0 ||
        (uint64_t)ls[1] < dim[2])
        return false;
    for (uint64_t q = 0; q < dim[0]; q++) {
        RtView w = {.rows = dim[1], .rowb = dim[2] * es, .lrs = (uint64_t)ls[1] * es,
                    .drs = ds[1] * es, .seg = x->seg};
        w.lo = x->lx + q * (uint64_t)ls[0] * es;
        w.src = c->seg[x->seg] + x->dram_off + (int64_t)q * ds[0] * (int64_t)es;
        w.hi = w.lo + (w.rows - 1) * w.lrs + w.rowb;
        w.shi = w.src + (int64_t)(w.rows - 1) * w.drs + (int64_t)w.rowb;
        if (!place_view(c, d, &w, true, (int64_t)w.lo, (int64_t)w.hi))
            rt_copy_rows(c->lx + w.lo, (int64_t)w.lrs, w.src, w.drs, w.rows, w.rowb);
    }
    return true;
}

/* A LOAD: deferred as a view when it moves whole rows, at least RT_DEFER_MIN bytes
 * (below, a copy costs less than keeping track of it), and a slot is free, or as a
 * view per plane (defer_planes); else (and for the views it partly overwrites)
 * carried out. */
void rt_defer_load(RtCore *c, RtDefer *d, const SpyDma *x) {
    if (!d->n) {                     /* the common small LOAD, quickly */
        uint64_t bytes = x->esize;
        for (int i = 0; i < ISA_MAX_DIMS; i++)
            bytes *= x->dims[i];
        if (bytes < RT_DEFER_MIN) {
            rt_dma(c, x, false);
            return;
        }
    }
    RtView w = {0};
    bool view = load_view(c, x, &w);
    if (!view && defer_planes(c, d, x))
        return;
    int64_t lo = (int64_t)w.lo, hi = (int64_t)w.hi;
    if (d->n && !view) {
        rt_dma_span(x, true, &lo, &hi);
        lo += x->lx, hi += x->lx;
    }
    if (!place_view(c, d, &w, view, lo, hi))
        rt_dma(c, x, false);
}

/* Copies rows of rowb contiguous bytes, byte strides ds (destination) and ss (source). */
void rt_copy_rows(uint8_t *dst, int64_t ds, const uint8_t *src, int64_t ss, uint64_t rows,
                  size_t rowb) {
#if RT_HAVE_X86_KERNELS
    if (rows > 1 && rt_copy_rows512(dst, ds, src, ss, rows, rowb))
        return;
#endif
    for (uint64_t r = 0; r < rows; r++)
        rt_copy_bytes(dst + (int64_t)r * ds, src + (int64_t)r * ss, rowb);
}

/* A LOAD planned RT_PH_ROWS (rt_prep.c), or the run of one-row LOADs it begins (their
 * p->merged bytes): deferred as one view as rt_defer_load would (a merged run as a
 * joined view, x = NULL), else copied. */
void rt_defer_rows(RtCore *c, RtDefer *d, const SpyDma *x, const RtPrep *p) {
    uint8_t *dst = c->lx + x->lx;
    const uint8_t *src = c->seg[x->seg] + x->dram_off;
    uint32_t rowb = p->rows == 1 ? p->merged : p->rowb;
    if (!d->n && (uint64_t)p->rows * rowb < RT_DEFER_MIN) {
        rt_copy_rows(dst, p->lrs, src, p->drs, p->rows, rowb);
        return;
    }
    RtView w = {.lo = x->lx, .rows = p->rows, .rowb = rowb, .lrs = p->lrs, .drs = p->drs,
                .src = src, .x = p->run == 1 ? x : NULL, .seg = x->seg};
    w.hi = w.lo + (w.rows - 1) * w.lrs + w.rowb;
    w.shi = w.src + (w.rows - 1) * (uint64_t)w.drs + w.rowb;
    if (!place_view(c, d, &w, true, (int64_t)w.lo, (int64_t)w.hi))
        rt_copy_rows(dst, p->lrs, src, p->drs, p->rows, rowb);
}

/* The DRAM address of rows of rowb bytes, rsb bytes apart in LX, from byte off of view
 * v (not a transpose), when v holds them all row for row: a one-row view (a contiguous
 * run) at any row stride inside it, else rows of the view's own stride within its row
 * bytes; NULL when it does not. */
static const uint8_t *view_rows(const RtView *v, uint64_t off, uint64_t rows, uint64_t rsb,
                                uint64_t rowb) {
    if (v->rows == 1)
        return off + (rows - 1) * rsb + rowb <= v->hi - v->lo ? v->src + off : NULL;
    uint64_t r0 = off / v->lrs, c0 = off % v->lrs;
    if ((rows > 1 && rsb != v->lrs) || c0 + rowb > v->rowb || r0 + rows > v->rows)
        return NULL;
    return v->src + r0 * (uint64_t)v->drs + c0;
}

/* A DRAM row pitch that is a multiple of this many bytes maps every row of an operand
 * to the same host cache sets: the MATMUL kernel reading narrow rows (half the pitch
 * or less) in place from a joined view ran about 20% slower than on the LX copy (the
 * B tiles of a 1024 x 1024 float32 GEMM read in place), so such an operand is read
 * from LX (the same bits, by the documented copy) unless the kernel packs it (reads
 * each row once a block); whole rows (resnet's weights) stay in place. */
#define RT_ALIAS_PITCH 4096

/* Where a MATMUL operand of rows x cols elements of es bytes at LX byte a, row stride
 * ld, is read from: a view's DRAM when it lies inside one row for row (transposed
 * only when take_t; packed: the kernel packs it, rt_mm_packs); else LX, after
 * carrying out the views it touches. */
RtOperand rt_defer_operand(RtCore *c, RtDefer *d, uint32_t a, uint32_t rows, uint32_t cols,
                           uint32_t ld, unsigned es, bool take_t, bool packed) {
    RtOperand o = {c->lx + a, ld, false, RT_SEG_LX};
    if (!rows || !cols)
        return o;                    /* nothing is read */
    uint64_t end = a + ((uint64_t)(rows - 1) * ld + cols) * es;
    for (int i = 0; i < d->n; i++) {
        const RtView *v = &d->v[i];
        if (a < v->lo || a >= v->hi)
            continue;
        if (!packed && !v->x && rows > 1 && v->drs % RT_ALIAS_PITCH == 0 &&
            (uint64_t)cols * es * 2 <= (uint64_t)v->drs)
            break;                   /* narrow rows at a page-multiple pitch: copy first */
        uint64_t off = a - v->lo;
        if (!v->t) {
            const uint8_t *p = view_rows(v, off, rows, (uint64_t)ld * es, (uint64_t)cols * es);
            if (!p || (v->rows > 1 && v->drs % es))
                break;
            return (RtOperand){p, v->rows > 1 && rows > 1 ? (size_t)v->drs / es : ld, false,
                               v->seg};
        }
        uint64_t lrs = v->rows == 1 ? v->hi - v->lo : v->lrs;
        uint64_t r0 = off / lrs, c0 = off % lrs;
        if ((rows > 1 && (uint64_t)ld * es != lrs) || c0 + (uint64_t)cols * es > v->rowb ||
            r0 + rows > v->rows || v->drs % es || !take_t || es != 4 || c0 % es)
            break;
        return (RtOperand){v->src + r0 * es + c0 / es * (uint64_t)v->dcs, (size_t)v->dcs / es,
                           true, v->seg};
    }
    flush_lx(c, d, a, (int64_t)end);
    return o;
}

/* The elements from window B's element (0, 0) that its dims after the first (a
 * convolution's kernel rows and columns, its output pixels) reach, [*lo, *hi], and the
 * LX byte of the lowest in channel 0 (*first); false for an empty window. */
static bool window_inner(const SpyMatmul *mm, unsigned es, int64_t *lo, int64_t *hi,
                         int64_t *first) {
    *lo = *hi = 0;
    for (int q = 1; q < 5; q++) {
        int64_t ext = q < 3 ? mm->bw_kext[q] : mm->bw_next[q - 3];
        int64_t st = q < 3 ? mm->bw_ks[q] : mm->bw_ns[q - 3];
        if (ext == 0)
            return false;
        *((ext - 1) * st < 0 ? lo : hi) += (ext - 1) * st;
    }
    *first = (int64_t)mm->b + *lo * es;
    return mm->bw_kext[0] > 0;
}

/* Whether the rows of view v (several, not a transpose) hold window B of mm (elements
 * of es bytes) a channel a row: its first dim steps from one row to the next, the
 * others stay inside one row, from byte *c0 of row *r0; with whole, all its channels'
 * rows in v, else only their columns checked (at load: a LOAD the ones after it may
 * join into one view, rt_defer_useless). Only where the window reads at most half of
 * each row (a strided 1 x 1 window: the copy would move mostly bytes nothing reads;
 * a window that reads all of its rows, wav2vec2's convolutions of 3 taps at stride
 * 2, ran 2% slower from DRAM than from the dense copy, re-read by each group of
 * output channels). Not where the rows are a multiple of RT_ALIAS_PITCH apart and
 * the window reads a part of each (they share the host's cache sets:
 * rt_defer_operand), nor past the kernels' 32-bit offsets. */
static bool window_rows(const RtView *v, const SpyMatmul *mm, unsigned es, bool whole,
                        uint64_t *r0, uint64_t *c0) {
    int64_t lo, hi, first, e0 = mm->bw_kext[0];
    if (!window_inner(mm, es, &lo, &hi, &first) || v->t || v->rows < 2 || v->drs % es)
        return false;
    int64_t off = first - (int64_t)v->lo, lrs = (int64_t)v->lrs, rowb = (hi - lo + 1) * es;
    *c0 = (uint64_t)((off % lrs + lrs) % lrs);
    *r0 = (uint64_t)((off - (int64_t)*c0) / lrs);
    uint64_t reads = (uint64_t)mm->bw_kext[1] * mm->bw_kext[2] * mm->bw_next[0] *
                     mm->bw_next[1] * es;   /* at most, of a channel's row */
    return (e0 == 1 || (int64_t)mm->bw_ks[0] * es == lrs) && *c0 + (uint64_t)rowb <= v->rowb &&
           reads * 2 <= v->rowb &&
           (!whole || (off >= 0 && *r0 + (uint64_t)e0 <= v->rows)) &&
           !(v->drs % RT_ALIAS_PITCH == 0 && (uint64_t)rowb * 2 <= (uint64_t)v->drs) &&
           (e0 - 1) * (v->drs / es) + hi - lo < ((int64_t)1 << 30);
}

/* Where the window B of mm (ISA_F_BWIN, elements of es bytes) is read from when one
 * pending view holds all of it, channel for channel: the DRAM address of its element
 * (0, 0), and in *ks0 the stride of its first k dim (a convolution's input channels)
 * there; NULL when no view does (then the window is read in LX, after the views over it
 * are carried out). A window whose first dim steps from one row of the view to the
 * next (bw_ks[0] elements = the view's LX row stride) and whose other dims stay inside
 * one row (resnet50's stride-2 1 x 1 convolutions: a LOAD of 256 input channels of 7
 * rows of 56 pixels, of which the window reads every other pixel of every other row)
 * is the same window over DRAM with that dim's stride the view's DRAM row stride: the
 * kernels read the bytes the LOAD would have copied, without the copy (a quarter of it
 * read). Not for rows a multiple of RT_ALIAS_PITCH apart that the window reads only
 * part of (they share the host's cache sets: rt_defer_operand). */
static const uint8_t *window_src(const RtDefer *d, const SpyMatmul *mm, unsigned es,
                                 int64_t *ks0) {
    int64_t lo, hi, first;
    if (!window_inner(mm, es, &lo, &hi, &first))
        return NULL;
    for (int i = 0; i < d->n; i++) {
        const RtView *v = &d->v[i];
        uint64_t r0, c0;
        if (v->t || first < (int64_t)v->lo || first >= (int64_t)v->hi)
            continue;
        if (v->rows == 1) {   /* one run of bytes: the window as it is, if inside */
            int64_t wlo, whi;
            rt_mm_win_range(mm, es, &wlo, &whi);
            *ks0 = mm->bw_ks[0];
            return wlo * es >= (int64_t)v->lo && whi * es <= (int64_t)v->hi
                       ? v->src + ((int64_t)mm->b - (int64_t)v->lo) : NULL;
        }
        if (!window_rows(v, mm, es, true, &r0, &c0))
            return NULL;
        *ks0 = v->drs / es;
        return v->src + r0 * (uint64_t)v->drs + c0 - lo * es;
    }
    return NULL;
}

/* Where the F32 window B of mm is read from DRAM by the vector kernels (window_src;
 * they take it with A where rt_defer_operand puts it: rt_mm_win_takes_a), its first
 * k dim's stride in *ks0; NULL: in LX. The same answer before the MATMUL runs
 * (rt_defer_before: its range is then not carried out) and when it runs. */
const uint8_t *rt_defer_window(const RtCore *c, const RtDefer *d, const SpyMatmul *mm,
                               int64_t *ks0) {
    if (!d->n || mm->dtype != ISA_DT_F32 || !rt_mm_win_takes_a(c, mm))
        return NULL;
    return window_src(d, mm, 4, ks0);
}

/* Carries out every view whose LX bytes intersect [lo, hi) of LX (a VEC chain's
 * regions, rt_fuse.c). */
void rt_defer_flush_lx(RtCore *c, RtDefer *d, int64_t lo, int64_t hi) {
    flush_lx(c, d, lo, hi);
}

/* Carries out every view whose DRAM source intersects [lo, hi) (what a fused STORE
 * writes, rt_fuse.c). */
void rt_defer_flush_dram(RtCore *c, RtDefer *d, const uint8_t *lo, const uint8_t *hi) {
    for (int i = d->n - 1; lo < hi && i >= 0; i--)
        if (lo < d->v[i].shi && d->v[i].src < hi)
            flush_one(c, d, i);
}

/* Where rows of rowb bytes at LX byte a, rs bytes apart, are in DRAM: the address of
 * the first in a pending view (not a transpose) that holds them all row for row, and
 * its DRAM row stride (*srs); NULL when no view does. The bytes are those the view's
 * LOAD would have put in LX. */
const uint8_t *rt_defer_rows_src(const RtDefer *d, int64_t a, uint64_t rows, int64_t rs,
                                 uint64_t rowb, int64_t *srs) {
    if (!rows || !rowb || a < 0 || rs < 0)
        return NULL;
    for (int i = 0; i < d->n; i++) {
        const RtView *v = &d->v[i];
        if (v->t || a < (int64_t)v->lo || a >= (int64_t)v->hi)
            continue;
        *srs = v->rows == 1 ? rs : v->drs;
        return view_rows(v, (uint64_t)a - v->lo, rows, (uint64_t)rs, rowb);
    }
    return NULL;
}

/* Carries out the views a STORE x may read in LX ([lo, hi) relative to x->lx) or whose
 * DRAM source it may write ([dlo, dhi) relative to its DRAM address). */
static void flush_store(RtCore *c, RtDefer *d, const SpyDma *x, int64_t lo, int64_t hi,
                        int64_t dlo, int64_t dhi) {
    flush_lx(c, d, (int64_t)x->lx + lo, (int64_t)x->lx + hi);
    const uint8_t *b = c->seg[x->seg] + x->dram_off;
    for (int i = d->n - 1; dhi > dlo && i >= 0; i--)
        if (b + dlo < d->v[i].shi && d->v[i].src < b + dhi)
            flush_one(c, d, i);
}

/* Carries out the views that instruction in (not a LOAD; a MATMUL's A and B are
 * resolved by rt_defer_operand) may read or write in LX, or whose DRAM source it may
 * write. p: its plan (rt_prep.c), or NULL. */
void rt_defer_before(RtCore *c, RtDefer *d, const SpyInsn *in, const RtPrep *p) {
    if (!d->n)
        return;
    switch (in->opcode) {
    case ISA_STORE: {
        int64_t lo, hi, dlo, dhi;
        if (p && p->how == RT_PH_ROWS) {   /* rows: the spans from the plan */
            lo = dlo = 0;
            hi = (int64_t)(p->rows - 1) * p->lrs + p->rowb;
            dhi = (int64_t)(p->rows - 1) * p->drs + p->rowb;
        } else {
            rt_dma_span(&in->dma, true, &lo, &hi);
            rt_dma_span(&in->dma, false, &dlo, &dhi);
        }
        flush_store(c, d, &in->dma, lo, hi, dlo, dhi);
        break;
    }
    case ISA_GATHER: {
        const SpyGather *g = &in->gather;
        flush_2d(c, d, g->lx_idx, 1, 0, g->nidx, 1, 4);
        flush_2d(c, d, g->lx_dst, g->nidx, g->dst_row_stride, g->row_elems, 1, g->esize);
        break;
    }
    case ISA_MATMUL: {
        const SpyMatmul *mm = &in->mm;
        if (mm->flags & ISA_F_BWIN) {   /* a window B is read in LX, over its range, */
            unsigned es = mm->dtype == ISA_DT_F32 ? 4 : mm->dtype == ISA_DT_DLF16 ? 2 : 1;
            int64_t lo, hi, ks0;
            rt_mm_win_range(mm, es, &lo, &hi);
            if (!rt_defer_window(c, d, mm, &ks0))  /* unless from a view's DRAM */
                flush_lx(c, d, lo * es, hi * es);
            if (!rt_mm_win_takes_a(c, mm))   /* A read in LX too */
                flush_2d(c, d, mm->a, mm->m, mm->lda, mm->k, 1, es);
        }
        flush_2d(c, d, mm->c, mm->m, mm->ldc, mm->n, 1, 4);
        break;
    }
    case ISA_VEC: {
        const SpyVec *v = &in->vec;
        unsigned es = rt_dtype_size(v->dtype), ss = rt_dtype_size(v->src_dtype);
        es = es ? es : 8;
        ss = ss > es ? ss : es;       /* narrower operands (a condition) are covered */
        flush_2d(c, d, v->dst, v->rows, v->dst_rs, v->cols, 1, es);
        for (int q = 0; q < v->nsrc && q < 3; q++)   /* an immediate reads no LX */
            if (!(q == 0 && (v->flags & ISA_F_IMM_A)) && !(q == 1 && (v->flags & ISA_F_IMM)))
                flush_2d(c, d, v->src[q], v->rows, v->src_rs[q], v->cols, v->src_cs[q], ss);
        break;
    }
    case ISA_VREDUCE: {
        const SpyVReduce *r = &in->red;
        flush_2d(c, d, r->dst, r->rows, r->dst_rs, 1, 1, 8);
        flush_2d(c, d, r->src, r->rows, r->src_rs, r->len, r->src_cs, 8);
        break;
    }
    case ISA_VFILL: flush_2d(c, d, in->fill.dst, 1, 0, in->fill.n, 1, 8); break;
    case ISA_VSCAN: {
        const SpyVScan *s = &in->scan;
        flush_2d(c, d, s->dst, s->rows, s->dst_rs, s->len, 1, 8);
        flush_2d(c, d, s->src, s->rows, s->src_rs, s->len, 1, 8);
        break;
    }
    case ISA_NOP:
    case ISA_BARRIER: break;
    default: flush_all(c, d); break;   /* SCATTER and anything else */
    }
}
