/* rt_affinity.c: the order in which host threads take a kernel's programs, chosen so
 * that programs reading the same activations run back to back on one thread.
 *
 * A session shares a kernel's programs between its threads through one counter:
 * thread 0 takes them from the front of the kernel's list (m->active), the others from
 * the back (rt_session.c). In core order, a 1 x 1 convolution cut into two halves of
 * output channels over 14 blocks of pixels listed the halves one after the other: the
 * two programs of a pixel block, which LOAD the same input, ran half a kernel apart,
 * one on each thread, so both threads read the whole input, half of it from the other
 * core's caches (resnet50 spent a fifth more CPU time at two threads than at one).
 *
 * At load, kernel by kernel in schedule order, each program gets a key: the grains
 * (RT_AFF_GRAIN bytes) of non-constant DRAM it LOADs that the front half of an earlier
 * kernel's list last STOREd, minus those the back half did, then where it first LOADs
 * non-constant data. Programs that LOAD the same activations have equal keys; the
 * stable sort by key (highest score, then lowest address) puts them next to each
 * other, and data the front half wrote goes to the front again. The programs of one
 * input patch (rt_memo.c) share one key and so stay together. Only the order in which
 * host threads take programs changes: the programs of a kernel are independent, so the
 * outputs are the same bits, and the modelled time is computed from the bundle.
 */
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

#define RT_AFF_GRAIN 256         /* bytes of DRAM a side is recorded for */
#define RT_AFF_MAX_GRAINS (1u << 24) /* the side map's entries at most (a larger arena:
                                   coarser grains) */

/* The side map: per grain of each non-constant segment, 0 (unwritten), 1 (front) or 2
 * (back). */
typedef struct {
    uint8_t **side;          /* [nsegs], NULL for constants */
    uint64_t *grain;         /* [nsegs] bytes a grain */
    uint64_t *ngrains;
} AffMap;

/* The grains [g0, g1) of segment seg that bytes [lo, hi) touch (clamped). */
static bool grains_of(const AffMap *a, uint32_t seg, int64_t lo, int64_t hi, uint64_t *g0,
                      uint64_t *g1) {
    if (!a->side[seg] || lo >= hi || hi <= 0)
        return false;
    uint64_t l = lo < 0 ? 0 : (uint64_t)lo, n = a->ngrains[seg];
    *g0 = l / a->grain[seg];
    *g1 = ((uint64_t)hi + a->grain[seg] - 1) / a->grain[seg];
    *g1 = *g1 > n ? n : *g1;
    return *g0 < *g1;
}

/* The DRAM bytes [lo, hi) of LOAD or STORE x, relative to its segment. */
static void dram_bytes(const SpyDma *x, int64_t *lo, int64_t *hi) {
    rt_dma_span(x, false, lo, hi);
    *lo += (int64_t)x->dram_off, *hi += (int64_t)x->dram_off;
}

/* Counts into n[v] the grains that program pd LOADs and side v last STOREd (v = 0:
 * none). */
static void program_reads(const spy_model *m, const AffMap *a, const SpyProgramDesc *pd,
                          uint64_t n[3]) {
    n[0] = n[1] = n[2] = 0;
    for (uint32_t i = 0; i < pd->ninsns; i++) {
        const SpyInsn *in = &m->code[pd->first_insn + i];
        int64_t lo, hi;
        uint64_t g0, g1;
        if (in->opcode != ISA_LOAD || in->dma.seg >= m->nsegs)
            continue;
        dram_bytes(&in->dma, &lo, &hi);
        if (!grains_of(a, in->dma.seg, lo, hi, &g0, &g1))
            continue;
        for (uint64_t g = g0; g < g1; g++)
            n[a->side[in->dma.seg][g]]++;
    }
}

/* Score of program pd: grains it LOADs that the front wrote minus those the back
 * wrote. */
static int64_t program_score(const spy_model *m, const AffMap *a, const SpyProgramDesc *pd) {
    uint64_t n[3];
    program_reads(m, a, pd, n);
    return (int64_t)n[1] - (int64_t)n[2];
}

/* Records program pd's STOREs as side v's. */
static void program_writes(const spy_model *m, AffMap *a, const SpyProgramDesc *pd, uint8_t v) {
    for (uint32_t i = 0; i < pd->ninsns; i++) {
        const SpyInsn *in = &m->code[pd->first_insn + i];
        int64_t lo, hi;
        uint64_t g0, g1;
        if (in->opcode != ISA_STORE || in->dma.seg >= m->nsegs)
            continue;
        dram_bytes(&in->dma, &lo, &hi);
        if (grains_of(a, in->dma.seg, lo, hi, &g0, &g1))
            memset(a->side[in->dma.seg] + g0, v, g1 - g0);
    }
}

/* The id of program pd's reusable input patch (rt_memo.c), 0 when it has none. */
static uint32_t patch_id(const spy_model *m, const SpyProgramDesc *pd) {
    for (uint32_t i = 0; i < pd->ninsns; i++)
        if (m->prep[pd->first_insn + i].memo_len)
            return m->prep[pd->first_insn + i].memo_id;
    return 0;
}

/* Where program pd first LOADs data that is not a constant (segment << 40 | offset),
 * 0 when nowhere: programs that LOAD the same activations have the same. */
static int64_t first_read(const spy_model *m, const SpyProgramDesc *pd) {
    for (uint32_t i = 0; i < pd->ninsns; i++) {
        const SpyInsn *in = &m->code[pd->first_insn + i];
        if (in->opcode == ISA_LOAD && in->dma.seg < m->nsegs &&
            m->segs[in->dma.seg].kind != SPY_SEGK_CONST)
            return (int64_t)in->dma.seg << 40 | (int64_t)(in->dma.dram_off & ((1ull << 40) - 1));
    }
    return 0;
}

/* Whether program key (score, first read) x goes before y: the higher score first,
 * then the lower first read. */
static bool before(const int64_t *x, const int64_t *y) {
    return x[0] != y[0] ? x[0] > y[0] : x[1] < y[1];
}

/* Orders kernel k's active programs (key: 2 entries a program), then records its
 * writes. The programs of one input patch, next to each other (rt_memo.c), share the
 * sum of their scores and the first one's first read, and so stay together: the sort
 * is stable. */
static void order_kernel(spy_model *m, AffMap *a, uint32_t k, int64_t *key) {
    const SpyKernelDesc *kd = &m->kernels[k];
    uint32_t a0 = m->active_first[k], na = m->active_first[k + 1] - a0;
    uint32_t *act = m->active + a0;
    for (uint32_t q = 0; q < na; q++) {
        const SpyProgramDesc *pd = &m->programs[kd->first_program + act[q]];
        key[2 * q] = program_score(m, a, pd);
        key[2 * q + 1] = first_read(m, pd);
    }
    for (uint32_t q = 0; q < na;) {         /* runs of one patch: one key */
        uint32_t id = patch_id(m, &m->programs[kd->first_program + act[q]]), e = q + 1;
        int64_t sum = key[2 * q];
        while (id && e < na && patch_id(m, &m->programs[kd->first_program + act[e]]) == id)
            sum += key[2 * e++];
        for (int64_t r1 = key[2 * q + 1]; q < e; q++)
            key[2 * q] = sum, key[2 * q + 1] = r1;
    }
    for (uint32_t q = 1; q < na; q++)       /* stable insertion sort */
        for (uint32_t r = q; r > 0 && before(&key[2 * r], &key[2 * r - 2]); r--) {
            int64_t t0 = key[2 * r], t1 = key[2 * r + 1];
            key[2 * r] = key[2 * r - 2], key[2 * r + 1] = key[2 * r - 1];
            key[2 * r - 2] = t0, key[2 * r - 1] = t1;
            uint32_t u = act[r]; act[r] = act[r - 1]; act[r - 1] = u;
        }
    for (uint32_t q = 0; q < na; q++)
        program_writes(m, a, &m->programs[kd->first_program + act[q]], q < (na + 1) / 2 ? 1 : 2);
}

/* Makes the side map of m's non-constant segments (false: out of memory). */
static bool map_new(const spy_model *m, AffMap *a) {
    a->side = calloc(m->nsegs + 1, sizeof *a->side);
    a->grain = calloc(m->nsegs + 1, sizeof *a->grain);
    a->ngrains = calloc(m->nsegs + 1, sizeof *a->ngrains);
    if (!a->side || !a->grain || !a->ngrains)
        return false;
    for (uint32_t s = 0; s < m->nsegs; s++) {
        if (m->segs[s].kind == SPY_SEGK_CONST)
            continue;
        uint64_t g = RT_AFF_GRAIN;
        while (m->segs[s].size / g > RT_AFF_MAX_GRAINS)
            g *= 2;
        a->grain[s] = g;
        a->ngrains[s] = (m->segs[s].size + g - 1) / g;
        if (!(a->side[s] = calloc(a->ngrains[s] + 1, 1)))
            return false;
    }
    return true;
}

static void map_free(const spy_model *m, AffMap *a) {
    for (uint32_t s = 0; a->side && s < m->nsegs; s++)
        free(a->side[s]);
    free(a->side);
    free(a->grain);
    free(a->ngrains);
}

/* The most active programs of a kernel of m. */
static uint32_t most_programs(const spy_model *m) {
    uint32_t most = 0;
    for (uint32_t k = 0; k < m->nkernels; k++) {
        uint32_t na = m->active_first[k + 1] - m->active_first[k];
        most = na > most ? na : most;
    }
    return most;
}

/* Orders every kernel's programs (m->active) for two-thread locality, in schedule
 * order (a kernel scheduled again keeps its first order); without memory, none. */
void rt_affinity_model(spy_model *m) {
    AffMap a = {0};
    int64_t *key = malloc(2 * ((size_t)most_programs(m) + 1) * sizeof *key);
    uint8_t *seen = calloc(m->nkernels + 1, 1);
    bool ok = map_new(m, &a) && key && seen;
    for (uint32_t i = 0; ok && i < m->nsched; i++) {
        uint32_t k = m->schedule[i];
        if (!seen[k])
            order_kernel(m, &a, k, key);
        seen[k] = 1;
    }
    map_free(m, &a);
    free(key);
    free(seen);
}
