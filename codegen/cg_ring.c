/* cg_ring.c: operand tiles that several cores of a kernel load, shared over the core
 * ring (isa.md, LOAD flag RING).
 *
 * A tile whose access does not depend on some split grid dims is needed by every item
 * along them (the sharers): a matrix product's A by its N tiles, its B and a bias by
 * its M tiles, a convolution's weights by its output-row chunks, a mask or a rotary
 * table by every head. It is loaded in pieces; each piece comes from DRAM on one
 * sharer's core, chosen round-robin, and over the ring on the others, so the kernel
 * reads it from DRAM once and the reads spread over its cores. The verifier checks
 * that every ring LOAD has its DRAM LOAD on another core (runtime/rt_verify_ring.c).
 */
#include <string.h>

#include "cg_internal.h"

/* Items of contraction kernel k that share one tile of its operand access a (A of a
 * MATMUL, the weights of a CONV): the product of the chunk counts of the grid dims a
 * does not depend on (1: not shared). */
int64_t cg_ring_sharers(const IrKernel *k, const IrAccess *a)
{
    const IrGrid *gr = &k->grid;
    int64_t n = 1;
    for (int d = 0; d < gr->rank && k->core_first; d++)
        if (a->is[d] == 0)
            n *= (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
    return n;
}

/* Whether this core receives piece j of the operand tile (access a) of the item at
 * start over the ring rather than loading it from DRAM. The items of one tile (the
 * same indices along the grid dims a depends on) share it: piece j comes from DRAM on
 * the core that owns the sharer numbered j mod (sharers), which puts it on the ring
 * (isa.md ISA_F_RING), so the DRAM reads of a shared tile spread over its cores. */
bool cg_ring_recv(const CgEmit *e, const IrKernel *k, const IrAccess *a, const int64_t *start,
                  int64_t j)
{
    const IrGrid *gr = &k->grid;
    int64_t sh = cg_ring_sharers(k, a), rest = j % (sh > 0 ? sh : 1), tile[IR_ITER_MAX];
    if (sh <= 1)
        return false;
    for (int d = gr->rank - 1; d >= 0; d--) {   /* sharer `rest`, row-major */
        int64_t nc = (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
        tile[d] = start[d] / gr->chunk[d];
        if (a->is[d] == 0) {
            tile[d] = rest % nc;
            rest /= nc;
        }
    }
    uint64_t item = 0;
    for (int d = 0; d < gr->rank; d++)
        item = item * (uint64_t)((gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d]) +
               (uint64_t)tile[d];
    return plan_item_core(k, item) != e->core;
}

/* Sharers of the tile of access a over iteration dims dim[0..n) (cg_ring_sharers), or 1
 * when the tile spans a grid dim it does not depend on (a broadcast row of a mask
 * repeated over the row chunks) that is cut with a ragged edge: the edge item's tile
 * is shorter there, so the sharers' tiles differ and none can be sent for another. */
static int64_t tile_sharers(const IrKernel *k, const IrAccess *a, const int *dim, int n)
{
    const IrGrid *gr = &k->grid;
    for (int i = 0; i < n; i++)
        if (dim[i] < gr->rank && a->is[dim[i]] == 0 && gr->ext[dim[i]] % gr->chunk[dim[i]])
            return 1;
    return cg_ring_sharers(k, a);
}

/* Load the operand tile of access a over dims (len[i], iteration dim dim[i]), i < n,
 * dense in LX at lx but for a row pitch of its outermost dim (0: dense), of the item
 * at st (depth chunk c). A tile shared by several items (cg_ring_sharers) is loaded in
 * pieces (at most one per sharer, CG_CACHE_MAX / 2 at most), cut along its dim of the
 * largest DRAM stride so that the DRAM runs stay whole: each piece from DRAM on one
 * sharer, over the ring on the others (cg_ring_recv). A piece is 8 elements of the cut
 * dim at least, or one when that dim steps over whole sticks (rows of an A tile: one
 * row each, so that 12 sharers of a 64-row tile load 5 or 6 rows each, not 8 of them
 * 8 rows and 4 none). */
void cg_load_shared(CgEmit *e, const IrKernel *k, const IrAccess *a, const int64_t *st, int nd,
                    uint32_t lx, unsigned es, const int64_t *len, const int *dim, int n,
                    int64_t pitch, int64_t c)
{
    int64_t sh = k && n > 0 ? tile_sharers(k, a, dim, n) : 1, s[IR_ITER_MAX], l[IR_ITER_MAX];
    int64_t ls[IR_ITER_MAX];
    int cut = 0;
    if (n == 0) {                                /* one element */
        CgDims d = {0};
        uint32_t seg;
        int64_t off;
        cg_access_at(e, a, st, nd, es, &seg, &off);
        cg_load_cached(e, seg, off, lx, es, &d);
        return;
    }
    for (int i = n - 1; i >= 0; i--) {           /* dense LX strides, pitch outermost */
        ls[i] = i + 1 < n ? ls[i + 1] * len[i + 1] : 1;
        int64_t x = a->is[dim[i]] < 0 ? -a->is[dim[i]] : a->is[dim[i]];
        int64_t y = a->is[dim[cut]] < 0 ? -a->is[dim[cut]] : a->is[dim[cut]];
        cut = len[i] > 1 && (len[cut] <= 1 || x > y) ? i : cut;
    }
    if (pitch)
        ls[0] = pitch;
    int64_t m = len[cut], np = (m + 7) / 8;
    int64_t xs = a->is[dim[cut]] < 0 ? -a->is[dim[cut]] : a->is[dim[cut]];
    if (xs * (int64_t)es >= (int64_t)e->t->stick_bytes)
        np = m;
    np = np < sh ? np : sh;
    np = np < CG_CACHE_MAX / 2 ? np : CG_CACHE_MAX / 2;
    np = np > 1 ? np : 1;
    memcpy(s, st, (size_t)nd * sizeof *s);
    memcpy(l, len, (size_t)n * sizeof *l);
    for (int64_t p = 0, r0 = 0; p < np; p++) {
        int64_t r1 = m * (p + 1) / np;
        l[cut] = r1 - r0;
        s[dim[cut]] = st[dim[cut]] + r0;
        e->load_flags = sh > 1 && cg_ring_recv(e, k, a, st, c * np + p) ? ISA_F_RING : 0;
        CgDims d = {0};
        for (int i = 0; i < n; i++)
            cg_dims_add(&d, l[i], a->is[dim[i]], ls[i]);
        uint32_t seg;
        int64_t off;
        cg_access_at(e, a, s, nd, es, &seg, &off);
        cg_load_cached(e, seg, off, lx + (uint32_t)(r0 * ls[cut] * es), es, &d);
        r0 = r1;
    }
    e->load_flags = 0;
}
