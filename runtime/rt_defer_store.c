/* rt_defer_store.c: a STORE of LX bytes that deferred LOADs still hold (rt_defer.c)
 * copied from those LOADs' DRAM, not through LX.
 *
 * A data-movement kernel (a pad, a materialised slice, a concatenation) LOADs a tile
 * and STOREs it elsewhere; a pad first fills its border in LX. With the LOAD deferred,
 * the STORE carried out the LOAD (a copy into LX) and then copied LX to DRAM: two
 * passes over the tile. Here each run of the STORE (its innermost dim, contiguous in
 * LX and in DRAM) is copied piece by piece: the bytes a pending view holds from the
 * view's DRAM source, the others (the border) from LX; the views stay pending, LX
 * keeping their bytes for any later reader. The bytes written are those the LOAD would
 * have put in LX and the STORE taken from there: the same bits. Not taken (the normal
 * path then carries out what it must): a converting STORE, one that no view touches,
 * one over a transposed view, one whose destination overlaps a view's DRAM source (the
 * view must be carried out first), or one of more than STORE_RUNS_MAX runs. Modelled
 * time is computed from the bundle and does not change.
 */
#include <string.h>

#include "rt_copy.h"
#include "rt_exec.h"

#define STORE_RUNS_MAX 4096      /* runs of a STORE walked at most */

/* The runs of STORE x: the extents and strides (elements) of its non-unit dims but the
 * innermost, outermost first, in dim / ls / ds (*nd of them), the innermost run's bytes
 * (*runb) and the number of runs; false when the innermost dim is not contiguous on
 * both sides or there are too many runs. */
static bool store_runs(const SpyDma *x, uint32_t *dim, int64_t *ls, int64_t *ds, int *nd,
                       uint64_t *runb, uint64_t *nruns) {
    int last = -1, n = 0;
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        if (x->dims[i] != 1)
            last = i;
    *nruns = 1;
    *nd = 0;
    *runb = x->esize;
    if (last < 0)                         /* one element */
        return true;
    if (x->lx_stride[last] != 1 || x->dram_stride[last] != 1)
        return false;
    for (int i = 0; i < last; i++)
        if (x->dims[i] != 1) {
            dim[n] = x->dims[i], ls[n] = x->lx_stride[i], ds[n] = x->dram_stride[i];
            *nruns *= x->dims[i];
            n++;
        }
    *nd = n;
    *runb = (uint64_t)x->dims[last] * x->esize;
    return *nruns <= STORE_RUNS_MAX;
}

/* LX and DRAM byte offsets of run r of the runs (dim, ls, ds: nd dims) of elements of es
 * bytes. */
static void run_at(uint64_t r, const uint32_t *dim, const int64_t *ls, const int64_t *ds,
                   int nd, unsigned es, int64_t *lo, int64_t *dof) {
    *lo = *dof = 0;
    for (int i = nd - 1; i >= 0; i--) {
        uint64_t q = r % dim[i];
        r /= dim[i];
        *lo += (int64_t)q * ls[i] * es;
        *dof += (int64_t)q * ds[i] * es;
    }
}

/* The first piece of view v at or after LX byte pos, before end: its LX start (end
 * when none), its end (*pe) and DRAM address (*src). A view's rows are rowb bytes,
 * lrs apart (a one-row view: [lo, hi)). */
static int64_t view_piece(const RtView *v, int64_t pos, int64_t end, int64_t *pe,
                          const uint8_t **src) {
    int64_t lo = (int64_t)v->lo;
    if ((int64_t)v->hi <= pos || lo >= end)
        return end;
    if (v->rows == 1) {
        int64_t s = pos > lo ? pos : lo;
        *pe = (int64_t)v->hi < end ? (int64_t)v->hi : end;
        *src = v->src + (s - lo);
        return s;
    }
    int64_t lrs = (int64_t)v->lrs, rowb = (int64_t)v->rowb;
    int64_t j = pos < lo ? 0 : (pos - lo) / lrs;
    if (pos >= lo + j * lrs + rowb)       /* in the gap after row j */
        j++;
    if (j >= (int64_t)v->rows || lo + j * lrs >= end)
        return end;
    int64_t rs = lo + j * lrs, s = pos > rs ? pos : rs;
    *pe = rs + rowb < end ? rs + rowb : end;
    *src = v->src + j * v->drs + (s - rs);
    return s;
}

/* Copies LX bytes [a, a + n) of core c to dst: the pieces pending views hold from their
 * DRAM source, the rest from LX. */
static void merge_run(const RtCore *c, const RtDefer *d, int64_t a, uint64_t n, uint8_t *dst) {
    int64_t pos = a, end = a + (int64_t)n;
    while (pos < end) {
        int64_t next = end, pe = end;
        const uint8_t *src = NULL;
        for (int i = 0; i < d->n; i++) {
            int64_t e = end;
            const uint8_t *s = NULL;
            int64_t at = view_piece(&d->v[i], pos, end, &e, &s);
            if (at < next)
                next = at, pe = e, src = s;
        }
        if (next > pos)
            rt_copy_bytes(dst + (pos - a), c->lx + pos, (size_t)(next - pos));
        if (next < end)
            rt_copy_bytes(dst + (next - a), src, (size_t)(pe - next));
        pos = next < end ? pe : end;
    }
}

bool rt_defer_store(RtCore *c, const RtDefer *d, const SpyDma *x) {
    uint32_t dim[ISA_MAX_DIMS];
    int64_t ls[ISA_MAX_DIMS], ds[ISA_MAX_DIMS], llo, lhi, dlo, dhi;
    uint64_t runb, nruns;
    int nd;
    if (!d->n || (x->flags & ISA_F_F32) || !store_runs(x, dim, ls, ds, &nd, &runb, &nruns))
        return false;
    uint8_t *dst = c->seg[x->seg] + x->dram_off;
    rt_dma_span(x, true, &llo, &lhi);
    rt_dma_span(x, false, &dlo, &dhi);
    bool touched = false;
    for (int i = 0; i < d->n; i++) {
        const RtView *v = &d->v[i];
        bool in_lx = (int64_t)x->lx + llo < (int64_t)v->hi && (int64_t)v->lo < (int64_t)x->lx + lhi;
        if ((in_lx && v->t) || (dst + dlo < v->shi && v->src < dst + dhi))
            return false;
        touched |= in_lx;
    }
    if (!touched)
        return false;
    for (uint64_t r = 0; r < nruns; r++) {
        int64_t lo, dof;
        run_at(r, dim, ls, ds, nd, x->esize, &lo, &dof);
        merge_run(c, d, (int64_t)x->lx + lo, runb, dst + dof);
    }
    return true;
}
