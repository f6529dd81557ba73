/* rt_verify_ring.c: the kernel-level rule of LOADs fed over the core ring (isa.md
 * "LOAD / STORE", ISA_F_RING): such a LOAD moves no DRAM bytes of its own; the same
 * tile (segment, offset, element size, dims and DRAM strides) must be LOADed from DRAM
 * by another core's program of the same kernel, the core that puts it on the ring.
 * Checked once at load, after every instruction passed rt_verify_insn.
 *
 * Per kernel, one pass puts its DRAM LOADs in a hash table of tiles (per tile the
 * program of its first DRAM LOAD, and whether another program has one too); a second
 * pass looks up each RING LOAD's tile. Linear in the LOADs: ordering them by tile
 * (qsort and memcmp) took about a sixth of the load of a bundle of size buckets, and
 * comparing each RING LOAD with all LOADs of its tile a third before that (those
 * bundles feed one weight tile to hundreds of LOADs).
 */
#include <stdlib.h>
#include <string.h>

#include "rt_model.h"

/* One tile of the table: a DRAM LOAD of it (NULL: a free slot), its program, and
 * whether a DRAM LOAD of another program reads it too. */
typedef struct {
    const SpyDma *x;
    uint64_t h;                  /* tile_hash of x */
    uint32_t p1;
    bool two;
} RingTile;

/* A hash of the DRAM tile a LOAD reads: segment, offset, element size, dims, DRAM
 * strides and the flags other than RING (what same_tile compares). */
static uint64_t tile_hash(const SpyDma *x) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ ((uint64_t)x->seg << 32 | (uint64_t)x->esize << 8 |
                                          x->ndim);
    uint64_t w[2 + ISA_MAX_DIMS];
    w[0] = (uint64_t)x->dram_off;
    w[1] = (uint64_t)(x->flags & ~ISA_F_RING);
    for (int i = 0; i < ISA_MAX_DIMS; i++)
        w[2 + i] = (uint64_t)x->dims[i] << 32 | (uint32_t)x->dram_stride[i];
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
        h = (h ^ w[i]) * 0xff51afd7ed558ccdull;     /* the mixing steps of MurmurHash3's */
        h ^= h >> 33;                               /* 64-bit finaliser */
    }
    return h;
}

/* Whether LOADs x and y read the same DRAM tile (flags other than RING included). */
static bool same_tile(const SpyDma *x, const SpyDma *y) {
    return x->seg == y->seg && x->dram_off == y->dram_off && x->esize == y->esize &&
           x->ndim == y->ndim && !memcmp(x->dims, y->dims, sizeof x->dims) &&
           !memcmp(x->dram_stride, y->dram_stride, sizeof x->dram_stride) &&
           (x->flags & ~ISA_F_RING) == (y->flags & ~ISA_F_RING);
}

/* The slot of x's tile in table t (mask + 1 slots, a power of two, never full): the
 * one that holds it, else the free one where it goes. */
static RingTile *tile_slot(RingTile *t, size_t mask, const SpyDma *x, uint64_t h) {
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask)
        if (!t[i].x || (t[i].h == h && same_tile(t[i].x, x)))
            return &t[i];
}

/* A LOAD of a kernel: its instruction, its tile's hash and the program (core) that
 * runs it. */
typedef struct {
    const SpyDma *x;
    uint64_t h;
    uint32_t prog;
} RingLoad;

/* Checks the rule for kernel k; l has room for its instructions, t for twice as many
 * (rounded up to a power of two). */
static spy_status ring_kernel(spy_model *m, uint32_t k, RingLoad *l, RingTile *t, RtErr *e) {
    const SpyKernelDesc *kd = &m->kernels[k];
    size_t n = 0;
    bool ring = false;
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *d = &m->programs[kd->first_program + j];
        for (uint64_t i = d->first_insn; i < d->first_insn + d->ninsns; i++)
            if (m->code[i].opcode == ISA_LOAD) {
                l[n++] = (RingLoad){&m->code[i].dma, 0, j};
                ring |= (m->code[i].dma.flags & ISA_F_RING) != 0;
            }
    }
    if (!ring)
        return SPY_OK;
    size_t mask = 1;
    while (mask + 1 < 2 * n)
        mask = 2 * mask + 1;
    memset(t, 0, (mask + 1) * sizeof *t);
    for (size_t i = 0; i < n; i++) {           /* the DRAM LOADs' tiles */
        l[i].h = tile_hash(l[i].x);
        if (l[i].x->flags & ISA_F_RING)
            continue;
        RingTile *s = tile_slot(t, mask, l[i].x, l[i].h);
        if (!s->x)
            *s = (RingTile){l[i].x, l[i].h, l[i].prog, false};
        else
            s->two |= s->p1 != l[i].prog;
    }
    for (size_t i = 0; i < n; i++) {           /* each RING LOAD's origin */
        if (!(l[i].x->flags & ISA_F_RING))
            continue;
        const RingTile *s = tile_slot(t, mask, l[i].x, l[i].h);
        if (s->x && (s->two || s->p1 != l[i].prog))
            continue;
        return rt_err_set(e, SPY_E_BAD_BUNDLE,
                          "kernel %u '%s' core %u: a LOAD over the ring (seg %u offset %lld) "
                          "that no other core of the kernel LOADs from DRAM",
                          k, rt_str(m, kd->name), m->programs[kd->first_program + l[i].prog].core,
                          l[i].x->seg, (long long)l[i].x->dram_off),
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
    size_t slots = 2;             /* the table of the kernel with the most instructions */
    while (slots < 2 * most)
        slots *= 2;
    RingLoad *l = malloc((most ? most : 1) * sizeof *l);
    RingTile *t = malloc(slots * sizeof *t);
    if (!l || !t)
        rt_err_set(e, SPY_E_NOMEM, "out of memory");
    for (uint32_t k = 0; k < m->nkernels && !e->status; k++)
        ring_kernel(m, k, l, t, e);
    free(l);
    free(t);
    return e->status;
}
