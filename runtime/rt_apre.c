/* rt_apre.c: a constant MATMUL operand (a weight) kept by the session in the layout
 * the host's MATMUL kernel reads, made once, not at every MATMUL.
 *
 * A convolution's weight is A: each core multiplies its output channels' rows of it by
 * its input patch, and the kernels with channels in the vector lanes (rt_kern_mmc.h)
 * first transpose those rows, a k-chunk at a time, at every MATMUL of every inference.
 * A weight lives in the bundle's constants, which nothing writes (the verifier forbids
 * STOREs there), so its transpose can be made once, the first time a MATMUL reads it,
 * and kept: later MATMULs read the copy, contiguous in the order the kernel consumes
 * it, prefetched chunks ahead (rt_kern_mmc.h); the strided rows of a weight streamed
 * from DRAM, transposed a chunk at a time, had each chunk wait on DRAM (resnet50, 2
 * threads: 0.93 of the time, paired medians of 12; one thread 0.94; 90 MiB more
 * resident for its 97 MiB of weights). ONNX Runtime prepacks its weights the same way.
 * A weight that is B (a transformer's linear layers) is kept the same way as the
 * panels the blocked kernel reads (rt_kern_mmt.h bpre; the key's kb says which
 * layout): bert_base 0.95 of the time, 2 threads, 330 MiB more resident.
 *
 * The session holds one table for all its threads: an entry per (A's address, row
 * stride, rows, k, layout), filled by the thread that first asks for it (the others
 * transpose for themselves meanwhile) and published with a release store. The copies
 * hold A's bits in another order, so results are the same; modelled time is computed
 * from the bundle. Memory: at most the budget given at creation; past it, MATMULs
 * transpose as before.
 *
 * Each copy also remembers which copy a thread read right after it, one for the thread
 * that takes a kernel's programs from the front of its list and one for those that take
 * them from the back (rt_apre_take_on): the kernels prefetch the start of that one while
 * they read the end of this one, at the next inference.
 *
 * The copies are cut one after the other from one reservation of the budget's size,
 * which asks for transparent huge pages (Linux, MADV_HUGEPAGE): an inference streams
 * every copy once, and in 4 KiB pages each page of them was a TLB miss of its own
 * (resnet50's 90 MiB: about 23,000 an inference; with 2 MiB pages 0.96-0.98 of the
 * time, paired medians of 8, 2 threads). Pages are touched, and so resident, only as
 * copies are made. Without the reservation, each copy is an allocation of its own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "rt_exec.h"

/* One kept copy: the key, its floats (bytes of them), whether they are written, and the
 * copy a thread taking programs from each end of a kernel's list read next
 * (rt_apre_take_on). */
typedef struct ApreEnt ApreEnt;
struct ApreEnt {
    RtAKey key;
    float *buf;
    size_t bytes;
    bool own;                /* buf allocated alone (not in the arena) */
    atomic_bool ready;
    _Atomic(ApreEnt *) next[2];
};

struct RtApre {
    pthread_mutex_t mu;
    ApreEnt **tab;           /* open addressing, cap a power of two, NULL: empty */
    size_t cap, n;
    size_t used, budget;     /* bytes of copies made, and allowed */
    uint8_t *arena;          /* the reservation the copies are cut from, or NULL */
    size_t acap, aused;      /* its bytes, and those cut */
};

#define APRE_HUGE ((size_t)2 << 20) /* bytes of a transparent huge page */

/* Reserves t's arena: the budget's bytes (rounded up to whole huge pages) of address
 * space, committed page by page as copies are written, in huge pages where the system
 * gives them; NULL arena when the reservation fails. */
static void arena_reserve(RtApre *t) {
    t->acap = (t->budget + APRE_HUGE - 1) & ~(APRE_HUGE - 1);
    void *p = mmap(NULL, t->acap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
                   MAP_NORESERVE, -1, 0);
    t->arena = p == MAP_FAILED ? NULL : p;
#ifdef MADV_HUGEPAGE
    if (t->arena)
        (void)madvise(t->arena, t->acap, MADV_HUGEPAGE);   /* a hint: fine if refused */
#endif
}

/* Room for a copy of bytes bytes, 64-aligned: cut from the arena, or (none, or full)
 * allocated alone (*own set); NULL without memory. */
static float *copy_room(RtApre *t, size_t bytes, bool *own) {
    size_t b = (bytes + 63) & ~(size_t)63;
    *own = !t->arena || b > t->acap - t->aused;
    if (*own)
        return aligned_alloc(64, b);
    float *p = (float *)(void *)(t->arena + t->aused);
    t->aused += b;
    return p;
}

/* Creates an empty table allowed budget bytes of copies; NULL without memory. */
RtApre *rt_apre_create(size_t budget) {
    RtApre *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    t->cap = 64;
    t->tab = calloc(t->cap, sizeof *t->tab);
    if (!t->tab) {
        free(t);
        return NULL;
    }
    t->budget = budget;
    arena_reserve(t);
    pthread_mutex_init(&t->mu, NULL);
    return t;
}

/* Frees the table and every copy (NULL is ignored). */
void rt_apre_free(RtApre *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->cap; i++)
        if (t->tab[i]) {
            if (t->tab[i]->own)
                free(t->tab[i]->buf);
            free(t->tab[i]);
        }
    if (t->arena)
        munmap(t->arena, t->acap);
    free(t->tab);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

static bool same(const RtAKey *x, const RtAKey *y) {
    return x->a == y->a && x->lda == y->lda && x->m == y->m && x->k == y->k && x->kb == y->kb;
}

static size_t slot_of(const RtApre *t, const RtAKey *k) {
    uint64_t h = (uint64_t)(uintptr_t)k->a * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)k->lda << 32 | k->m) * 0xff51afd7ed558ccdull;
    h ^= ((uint64_t)k->k << 32 | k->kb) * 0xc4ceb9fe1a85ec53ull;
    return (size_t)(h ^ h >> 29) & (t->cap - 1);
}

/* The slot of key k: its entry's, or the empty one where it would go. */
static size_t find(const RtApre *t, const RtAKey *k) {
    size_t i = slot_of(t, k);
    while (t->tab[i] && !same(&t->tab[i]->key, k))
        i = (i + 1) & (t->cap - 1);
    return i;
}

/* Doubles the table (locked); false without memory. */
static bool grow(RtApre *t) {
    RtApre g = *t;
    g.cap = t->cap * 2;
    g.tab = calloc(g.cap, sizeof *g.tab);
    if (!g.tab)
        return false;
    for (size_t i = 0; i < t->cap; i++)
        if (t->tab[i])
            g.tab[find(&g, &t->tab[i]->key)] = t->tab[i];
    free(t->tab);
    t->tab = g.tab;
    t->cap = g.cap;
    return true;
}

/* A new entry for k with bytes of room (locked); NULL when over the budget or without
 * memory. */
static ApreEnt *add(RtApre *t, const RtAKey *k, size_t bytes) {
    if (bytes > t->budget - t->used || (2 * (t->n + 1) > t->cap && !grow(t)))
        return NULL;
    ApreEnt *e = calloc(1, sizeof *e);
    if (!e || !(e->buf = copy_room(t, bytes, &e->own))) {
        free(e);
        return NULL;
    }
    e->key = *k;
    e->bytes = bytes;
    atomic_init(&e->ready, false);
    atomic_init(&e->next[0], NULL);
    atomic_init(&e->next[1], NULL);
    t->tab[find(t, k)] = e;
    t->n++;
    t->used += bytes;
    return e;
}

/* The entry of key k, added (with *fill set) on the first request; NULL over the budget,
 * without memory, or when t is NULL. */
static ApreEnt *take_entry(RtApre *t, const RtAKey *k, size_t bytes, bool *fill) {
    *fill = false;
    if (!t || !k->a || !bytes)
        return NULL;
    pthread_mutex_lock(&t->mu);
    ApreEnt *e = t->tab[find(t, k)];
    if (!e && (e = add(t, k, bytes)) != NULL)
        *fill = true;
    pthread_mutex_unlock(&t->mu);
    return e;
}

/* e's floats when the caller may read them: it is to write them (fill), or they are
 * published; else NULL. */
static float *entry_buf(ApreEnt *e, bool fill) {
    if (e && (fill || atomic_load_explicit(&e->ready, memory_order_acquire)))
        return e->buf;
    return NULL;
}

/* The copy of A for key k (bytes long): its floats when made; on the first request,
 * room for them with *fill set (the caller writes them, then calls rt_apre_filled);
 * NULL when another thread is still writing it, over the budget, or t is NULL. */
float *rt_apre_take(RtApre *t, const RtAKey *k, size_t bytes, bool *fill) {
    ApreEnt *e = take_entry(t, k, bytes, fill);
    return entry_buf(e, *fill);
}

/* rt_apre_take for the thread of trail tr, which records that this copy came after the
 * one it read before (that one's next on tr's side: a kernel's programs are taken in
 * about the same order at every inference) and sets *next to the copy that came after
 * this one on that side the last time (NULL: none yet, or not made; *nbytes its bytes).
 * A kernel prefetches the start of it while it reads the end of this one: the first
 * k-chunk of each program's copy otherwise came from DRAM, nothing having touched it
 * before (resnet50, one thread, where copies lie in the order they are read and the
 * lines past a copy's end are the next one's: 1.7% faster prefetching those). */
float *rt_apre_take_on(RtApre *t, RtApreTrail *tr, const RtAKey *k, size_t bytes,
                       bool *fill, const float **next, size_t *nbytes) {
    ApreEnt *e = take_entry(t, k, bytes, fill), *last = tr->last;
    *next = NULL, *nbytes = 0;
    if (!e)
        return NULL;
    if (last != e) {
        if (last)
            atomic_store_explicit(&last->next[tr->side & 1], e, memory_order_relaxed);
        tr->last = e;
    }
    ApreEnt *n = atomic_load_explicit(&e->next[tr->side & 1], memory_order_relaxed);
    if (n && n != e && atomic_load_explicit(&n->ready, memory_order_acquire))
        *next = n->buf, *nbytes = n->bytes;
    return entry_buf(e, *fill);
}

/* Publishes the copy of key k, written since rt_apre_take asked for it. */
void rt_apre_filled(RtApre *t, const RtAKey *k) {
    pthread_mutex_lock(&t->mu);
    ApreEnt *e = t->tab[find(t, k)];
    pthread_mutex_unlock(&t->mu);
    if (e)
        atomic_store_explicit(&e->ready, true, memory_order_release);
}
