/* rt_verify_ring.c: the kernel-level rule of LOADs fed over the core ring (isa.md
 * "LOAD / STORE", ISA_F_RING): such a LOAD moves no DRAM bytes of its own; the same
 * tile (segment, offset, element size, dims and DRAM strides) must be LOADed from DRAM
 * by another core's program of the same kernel, the core that puts it on the ring.
 * Checked once at load, after every instruction passed rt_verify_insn.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_model.h"

/* A LOAD of a kernel: its instruction and the program (core) that runs it. */
typedef struct {
    const SpyDma *x;
    uint32_t prog;
} RingLoad;

/* Orders LOADs by the DRAM tile they read (flags other than RING included). */
static int tile_cmp(const void *a, const void *b) {
    const SpyDma *x = ((const RingLoad *)a)->x, *y = ((const RingLoad *)b)->x;
    if (x->seg != y->seg)
        return x->seg < y->seg ? -1 : 1;
    if (x->dram_off != y->dram_off)
        return x->dram_off < y->dram_off ? -1 : 1;
    int c = memcmp(&x->esize, &y->esize, 2);          /* esize, ndim */
    if (!c)
        c = memcmp(x->dims, y->dims, sizeof x->dims);
    if (!c)
        c = memcmp(x->dram_stride, y->dram_stride, sizeof x->dram_stride);
    if (!c && (x->flags & ~ISA_F_RING) != (y->flags & ~ISA_F_RING))
        c = (x->flags & ~ISA_F_RING) < (y->flags & ~ISA_F_RING) ? -1 : 1;
    return c;
}

/* The first RING LOAD of the equal tiles l[0..n) (sorted) without a DRAM LOAD of the
 * tile in another program, or NULL: one pass over the group, which knows the programs
 * of its first two DRAM LOADs of different programs (comparing every RING LOAD with its
 * whole group instead took a third of the load of a bundle of size buckets, whose
 * kernels feed one weight tile to hundreds of LOADs). */
static const RingLoad *group_orphan(const RingLoad *l, size_t n) {
    uint32_t p1 = UINT32_MAX;         /* a program with a DRAM LOAD of the tile */
    bool two = false;                 /* and another program has one too */
    for (size_t i = 0; i < n && !two; i++)
        if (!(l[i].x->flags & ISA_F_RING)) {
            two = p1 != UINT32_MAX && l[i].prog != p1;
            p1 = p1 == UINT32_MAX ? l[i].prog : p1;
        }
    for (size_t i = 0; i < n && !two; i++)
        if ((l[i].x->flags & ISA_F_RING) && (p1 == UINT32_MAX || l[i].prog == p1))
            return &l[i];
    return NULL;
}

/* Checks the rule for kernel k; l has room for all its LOADs. */
static spy_status ring_kernel(spy_model *m, uint32_t k, RingLoad *l, RtErr *e) {
    const SpyKernelDesc *kd = &m->kernels[k];
    size_t n = 0;
    bool ring = false;
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        for (uint64_t i = d->first_insn; i < d->first_insn + d->ninsns; i++)
            if (m->code[i].opcode == ISA_LOAD) {
                l[n++] = (RingLoad){&m->code[i].dma, j};
                ring |= (m->code[i].dma.flags & ISA_F_RING) != 0;
            }
    }
    if (!ring)
        return SPY_OK;
    qsort(l, n, sizeof *l, tile_cmp);
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && tile_cmp(&l[a], &l[b]) == 0; b++)
            ;
        const RingLoad *r = group_orphan(l + a, b - a);
        if (r)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "kernel %u '%s' core %u: a LOAD over the ring (seg %u offset "
                              "%lld) that no other core of the kernel LOADs from DRAM",
                              k, rt_str(m, kd->name),
                              m->programs[kd->first_program + r->prog].core, r->x->seg,
                              (long long)r->x->dram_off),
                   e->status;
    }
    return SPY_OK;
}

/* Verifies that every LOAD over the ring has its origin (see above). */
spy_status rt_ring_verify(spy_model *m, RtErr *e) {
    if (!(m->hdr->features & SPY_FEAT_RING))
        return SPY_OK;
    size_t most = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        size_t n = 0;
        for (uint32_t j = 0; j < m->kernels[k].ncores; j++)
            n += m->programs[m->kernels[k].first_program + j].ninsns;
        most = n > most ? n : most;
    }
    RingLoad *l = malloc((most ? most : 1) * sizeof *l);
    if (!l)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    for (uint32_t k = 0; k < m->nkernels && !e->status; k++)
        ring_kernel(m, k, l, e);
    free(l);
    return e->status;
}
