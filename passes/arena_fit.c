/* arena_fit.c: offline placement of the activation arena (see arena_fit.h).
 *
 * Placing blocks in kernel order, each at the lowest free offset (first fit), leaves
 * holes: a large block written late does not fit the hole a smaller dead one left, so
 * it goes above everything and the arena grows past the liveness bound (the 4x-hidden
 * GELU output of a transformer block, a ResNet stage's widest activation). All
 * lifetimes are known when planning, so the blocks are placed offline instead, as the
 * greedy-by-size planners of TFLite and MNN do: in decreasing size order, each block
 * goes into the smallest gap between the blocks already placed that are live at the
 * same time as it (best fit), or above them. Large blocks are placed first and the
 * small ones fill the gaps around them.
 *
 * No one order packs every graph best, so several are tried (kernel order with first
 * fit, which is the online plan; size order with best and with first fit; size x
 * lifetime order with best fit) and the smallest arena is kept. Each try scans the
 * placed blocks once per block: O(n^2) for n blocks, a few million steps for the
 * largest models.
 */
#include <stdlib.h>
#include <string.h>

#include "arena_fit.h"
#include "ir.h"

/* Sort key of block i: ascending k1, then k2, then i. */
typedef struct {
    uint64_t k1;
    uint32_t k2, i;
} FitKey;

/* The placement orders tried, and whether each uses best fit (else first fit). */
typedef enum { FIT_KERNEL, FIT_SIZE_BEST, FIT_SIZE_FIRST, FIT_AREA_BEST, FIT_NORDERS } FitOrder;

/* The scratch of one placement. */
typedef struct {
    FitKey *key;
    uint32_t *placed;                      /* placed blocks by offset */
    uint64_t *off, *best;                  /* offsets of this try, of the best one */
} FitWork;

/* qsort order of FitKey. */
static int cmp_key(const void *a, const void *b)
{
    const FitKey *x = a, *y = b;
    if (x->k1 != y->k1)
        return x->k1 < y->k1 ? -1 : 1;
    if (x->k2 != y->k2)
        return x->k2 < y->k2 ? -1 : 1;
    return (x->i > y->i) - (x->i < y->i);
}

/* Whether blocks a and b are live at one kernel. */
static bool meet(const ArenaBlock *a, const ArenaBlock *b)
{
    return a->first <= b->last && b->first <= a->last;
}

/* Fill w->key with order o's keys and sort them. */
static void fit_order(const ArenaBlock *b, uint32_t n, FitOrder o, FitWork *w)
{
    for (uint32_t i = 0; i < n; i++) {
        uint64_t span = (uint64_t)(b[i].last - b[i].first) + 1;
        FitKey *k = &w->key[i];
        k->i = i;
        k->k2 = b[i].first;
        if (o == FIT_KERNEL)
            k->k1 = b[i].first;
        else if (o == FIT_AREA_BEST)
            k->k1 = UINT64_MAX - (b[i].size > UINT64_MAX / span ? UINT64_MAX : b[i].size * span);
        else
            k->k1 = UINT64_MAX - b[i].size;
    }
    qsort(w->key, n, sizeof *w->key, cmp_key);
}

/* Offset for block x among the np placed blocks (by offset): the lowest gap between
 * the placed blocks live with x that holds it (first fit) or the smallest such gap
 * (best fit), else the end of the highest of them. Sets *at_idx to the index in
 * w->placed to insert x at. */
static uint64_t fit_one(const ArenaBlock *b, uint32_t x, uint32_t np, bool best_fit,
                        const FitWork *w, uint32_t *at_idx)
{
    uint64_t at = 0, pick = UINT64_MAX, pick_gap = UINT64_MAX, size = b[x].size;
    for (uint32_t j = 0; j < np; j++) {
        uint32_t y = w->placed[j];
        if (!meet(&b[x], &b[y]))
            continue;
        uint64_t o = w->off[y];
        if (o >= at + size && o - at < pick_gap) {
            pick = at, pick_gap = o - at;
            if (!best_fit)
                break;
        }
        if (o + b[y].size > at)
            at = o + b[y].size;
    }
    if (pick == UINT64_MAX)
        pick = at;
    uint32_t j = 0;                        /* insert after blocks at lower offsets */
    while (j < np && w->off[w->placed[j]] <= pick)
        j++;
    *at_idx = j;
    return pick;
}

/* Place the blocks in w->key's order into w->off; returns the arena size. */
static uint64_t fit_place(const ArenaBlock *b, uint32_t n, bool best_fit, FitWork *w)
{
    uint64_t peak = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = w->key[i].i, j;
        uint64_t o = fit_one(b, x, i, best_fit, w, &j);
        w->off[x] = o;
        memmove(w->placed + j + 1, w->placed + j, (i - j) * sizeof *w->placed);
        w->placed[j] = x;
        if (o + b[x].size > peak)
            peak = o + b[x].size;
    }
    return peak;
}

/* Scratch bytes for n blocks: keys (16 bytes each, so the offsets after them are
 * aligned), two offset arrays and the by-offset list; never 0. */
size_t pass_arena_fit_work(uint32_t n)
{
    return (size_t)n * (sizeof(FitKey) + sizeof(uint32_t) + 2 * sizeof(uint64_t)) + 16;
}

/* Try every order, keep the offsets of the smallest arena (the first of equals: the
 * kernel-order fit, the online plan, wins ties, so graphs it already packs keep their
 * bundles). */
uint64_t pass_arena_fit(ArenaBlock *b, uint32_t n, void *work)
{
    FitWork w;
    w.key = work;                          /* largest alignment first */
    w.off = (uint64_t *)(w.key + n);
    w.best = w.off + n;
    w.placed = (uint32_t *)(w.best + n);
    uint64_t best = UINT64_MAX;
    for (int o = 0; o < FIT_NORDERS && n; o++) {
        fit_order(b, n, (FitOrder)o, &w);
        uint64_t peak = fit_place(b, n, o == FIT_SIZE_BEST || o == FIT_AREA_BEST, &w);
        if (peak < best) {
            best = peak;
            memcpy(w.best, w.off, n * sizeof *w.best);
        }
    }
    for (uint32_t i = 0; i < n; i++)
        b[i].off = w.best[i];
    return n ? best : 0;
}
