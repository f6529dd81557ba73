/* rt_acache.c: a MATMUL's A operand packed once per host thread, not once per core.
 *
 * When every core of a kernel multiplies the same activations by its own columns of a
 * weight (bert_base's and the LLMs' projections: 32 cores, one [tokens x hidden] A
 * read from DRAM through a deferred LOAD), each core's MATMUL packs that A again
 * (rt_kern_mmt.h pack_a: its rows copied MMT_AP floats apart, for the micro-kernel to
 * broadcast from). The emulator runs a kernel's programs one after another on each
 * host thread, so once a thread sees the same A twice running it packs all of it into
 * its cache (RtCore.acache) and the MATMULs after it in the same schedule entry read
 * that copy: one copy of A per thread and entry instead of one per program.
 *
 * This holds only while A's DRAM bytes do not change: at load (rt_acache_model) the
 * DRAM bytes each kernel's STOREs write are listed (a kernel with a SCATTER, or with
 * more STOREs than listed, writes anything); at run time rt_acache_stable compares
 * A's bytes with them at the segments' actual addresses (so caller buffers bound to
 * the same memory count as one). The cache is forgotten at every schedule entry
 * (rt_acache_entry): another kernel may have written A since. The packed copy holds
 * A's bits, so results are the same; modelled time is computed from the bundle. The
 * same list tells rt_memo.c which input patches a kernel's STOREs cannot change.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_exec.h"
#include "rt_model.h"

/* STOREs listed per kernel at most; a kernel with more writes anything. */
#define RT_WRITES_MAX 4096

/* Lists kernel k's DRAM writes at w[0..*n) (room for cap): its STOREs' spans, or the
 * one entry RT_WRITES_ANY. */
static void kernel_writes(const spy_model *m, uint32_t k, RtWrite *w, uint32_t cap,
                          uint32_t *n) {
    const SpyKernelDesc *kd = &m->kernels[k];
    *n = 0;
    for (uint32_t j = 0; j < kd->ncores; j++) {
        const SpyProgramDesc *pd = &m->programs[kd->first_program + j];
        for (uint32_t i = 0; i < pd->ninsns; i++) {
            const SpyInsn *in = &m->code[pd->first_insn + i];
            if (in->opcode == ISA_SCATTER || (in->opcode == ISA_STORE && *n == cap)) {
                w[0] = (RtWrite){RT_WRITES_ANY, 0, 0};
                *n = 1;
                return;
            }
            if (in->opcode != ISA_STORE)
                continue;
            RtWrite *s = &w[(*n)++];
            s->seg = in->dma.seg;
            rt_dma_span(&in->dma, false, &s->lo, &s->hi);
            s->lo += in->dma.dram_off, s->hi += in->dma.dram_off;
        }
    }
}

/* Lists the DRAM writes of every kernel of the verified model m (m->kwr, m->kwr_first);
 * without memory, none (no A is then taken as stable). */
void rt_acache_model(spy_model *m) {
    size_t n = 0, cap = 16;          /* kwr is never NULL once listed, even when empty */
    RtWrite *w = malloc(RT_WRITES_MAX * sizeof *w), *all = malloc(cap * sizeof *all);
    uint32_t *first = malloc(((size_t)m->nkernels + 1) * sizeof *first);
    bool ok = w && all && first;
    for (uint32_t k = 0; ok && k < m->nkernels; k++) {
        uint32_t nk;
        kernel_writes(m, k, w, RT_WRITES_MAX, &nk);
        first[k] = (uint32_t)n;
        if (n + nk > cap) {
            cap = (n + nk) * 2;
            RtWrite *g = realloc(all, cap * sizeof *g);
            ok = g != NULL;
            all = g ? g : all;
        }
        if (ok && nk)                /* a kernel that stores nothing lists nothing */
            memcpy(all + n, w, nk * sizeof *w);
        n += nk;
    }
    free(w);
    if (!ok) {
        free(all);
        free(first);
        return;
    }
    first[m->nkernels] = (uint32_t)n;
    m->kwr = all;
    m->kwr_first = first;
}

/* The start of a schedule entry on core c: its kernel's writes, and nothing cached. */
void rt_acache_entry(RtCore *c, const RtWrite *wr, uint32_t nwr) {
    c->wr = wr;
    c->nwr = nwr;
    c->akey.a = NULL;
    c->aseen.a = NULL;
}

/* Whether the n bytes at p (DRAM) are written by no write of the running kernel. */
bool rt_acache_stable(const RtCore *c, const uint8_t *p, size_t n) {
    if (!c->wr || !c->acache)
        return false;
    for (uint32_t i = 0; i < c->nwr; i++) {
        const RtWrite *w = &c->wr[i];
        if (w->seg == RT_WRITES_ANY)
            return false;
        uintptr_t b = (uintptr_t)c->seg[w->seg], q = (uintptr_t)p; /* NULL: unbound */
        if (w->lo < w->hi && b + (uintptr_t)w->lo < q + n && q < b + (uintptr_t)w->hi)
            return false;
    }
    return true;
}

/* Whether keys x and y name the same packing of the same A. */
static bool same_key(const RtAKey *x, const RtAKey *y) {
    return x->a == y->a && x->lda == y->lda && x->m == y->m && x->k == y->k && x->kb == y->kb;
}

/* The cache when it holds the A of key k (*fill false), or when the last MATMUL that
 * could use it read the same A (*fill true: the caller packs A there; the cache then
 * holds k); else NULL, k remembered (a first sight: an A that one program alone
 * reads, a core's own weight rows, is not copied twice). */
float *rt_acache_take(RtCore *c, const RtAKey *k, bool *fill) {
    *fill = false;
    if (!c->acache || !k->a)
        return NULL;
    if (c->akey.a && same_key(&c->akey, k))
        return c->acache;
    if (c->aseen.a && same_key(&c->aseen, k)) {
        c->akey = *k;
        *fill = true;
        return c->acache;
    }
    c->aseen = *k;
    return NULL;
}
