/* plan_deal.c: which core runs each work item of a kernel in a bundle with symbolic
 * dimensions (IrKernel.deal, plan.h).
 *
 * Guards (isa.md "Guards") skip the items that hold only padding at the actual sizes,
 * and a kernel's time is its slowest core's, so the items still valid at a smaller
 * size should fall evenly over the cores. Along one grid dim the valid items are a
 * prefix of its chunks (a symbolic axis keeps its data at its start); over several
 * they are a box [0, v0) x [0, v1) x ... of chunk indices. Dealing the items
 * round-robin in row-major order spreads a prefix of the outermost dim, but not a box:
 * a 1x1 convolution of 8 images of 24 row chunks, at 3 images of 20 of the chunks, has
 * 60 valid items, yet cores 0..3 hold 3 each (items 0, 32, 64, ...) where 2 would do.
 *
 * The deal is chosen greedily over sampled boxes: a few prefix lengths per split dim
 * (a dim whose chunks are all in every box, such as output-channel tiles, is not
 * sampled: see deal_partial), their product capped at DEAL_SAMPLES. Items are taken
 * in order of how many samples they are valid in (most first: the first chunks of
 * each dim), and each goes to the core with room left (at most ceil(items / cores),
 * so the full box runs as balanced as round-robin) whose summed load over the samples
 * the item is valid in is least: the greedy step of the least sum of squared loads.
 * Each core then runs its items in grid order (operand tiles of consecutive items are
 * reused as before). Kernels too large for the search keep round-robin.
 */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define DEAL_SAMPLES 512         /* sampled boxes at most */
#define DEAL_STEPS 32            /* prefix lengths sampled per dim at most */
#define DEAL_ROUNDS 4           /* placements of every block */
#define DEAL_WORK (1u << 24)     /* items * cores * samples searched at most */

/* Chunk count of grid dim d. */
static int64_t deal_chunks(const IrGrid *gr, int d)
{
    return (gr->ext[d] + gr->chunk[d] - 1) / gr->chunk[d];
}

/* Whether the valid chunks of grid dim d of kernel k may be a proper prefix at some
 * size: a dim of more than one chunk along an axis of k's grid that a symbol sizes.
 * The grid's axes are not tracked back to the symbols here, so every split dim is
 * taken as one, but the output-channel dims of a convolution (its groups and channel
 * tiles), which no symbol sizes. */
static bool deal_partial(IrGraph *g, const IrKernel *k, int d)
{
    if (deal_chunks(&k->grid, d) <= 1)
        return false;
    bool conv = k->kind == IR_KK_CONTRACT && ir_node(g, k->anchor)->op == IR_OP_CONV;
    return !(conv && (d == 1 || d == 2));
}

/* The sampled prefix lengths of each partial dim (len[d][0..nlen[d]), nlen[d] 0 for
 * a dim left whole); returns the number of sampled boxes. */
static int deal_samples(IrGraph *g, const IrKernel *k, int64_t len[][DEAL_STEPS], int *nlen)
{
    int total = 1;
    for (int d = 0; d < k->grid.rank; d++) {
        nlen[d] = 0;
        if (!deal_partial(g, k, d))
            continue;
        int64_t n = deal_chunks(&k->grid, d);
        int steps = n < DEAL_STEPS ? (int)n : DEAL_STEPS;
        while (steps > 1 && total * steps > DEAL_SAMPLES)
            steps--;
        for (int i = 1; i <= steps; i++) {
            int64_t v = (n * i + steps - 1) / steps;
            if (!nlen[d] || len[d][nlen[d] - 1] != v)
                len[d][nlen[d]++] = v;
        }
        total *= nlen[d];
    }
    return total;
}

/* valid[s] for item it: whether each of its chunk indices lies in sample s's box. */
static void deal_item_valid(const IrGrid *gr, uint64_t it, int64_t len[][DEAL_STEPS],
                            const int *nlen, int ns, uint8_t *valid)
{
    int64_t idx[IR_ITER_MAX];
    for (int d = gr->rank - 1; d >= 0; d--) {
        int64_t nc = deal_chunks(gr, d);
        idx[d] = (int64_t)(it % (uint64_t)nc);
        it /= (uint64_t)nc;
    }
    for (int s = 0; s < ns; s++) {
        int rest = s;
        bool in = true;
        for (int d = gr->rank - 1; d >= 0; d--) {
            if (!nlen[d])
                continue;
            in = in && idx[d] < len[d][rest % nlen[d]];
            rest /= nlen[d];
        }
        valid[s] = in;
    }
}

/* Items by block, then decreasing count of samples they are valid in, then grid
 * order. */
typedef struct {
    uint32_t item, count;
    uint64_t block;
} DealKey;

static int deal_key_cmp(const void *a, const void *b)
{
    const DealKey *x = a, *y = b;
    if (x->block != y->block)
        return x->block < y->block ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->item < y->item ? -1 : x->item > y->item;
}

/* The core with room left in the block (room[c] > 0) for an item valid in the samples
 * its validity row marks: the one that least often goes past a sample's fair share
 * (ideal[s], the sample's valid items over the cores, rounded up), then of least load
 * summed over those samples. */
static uint32_t deal_pick(const uint32_t *load, const uint32_t *ideal, const uint8_t *valid,
                          int ns, const uint32_t *room, uint32_t cores)
{
    uint32_t best = UINT32_MAX;
    uint64_t bcost = 0;
    for (uint32_t c = 0; c < cores; c++) {
        if (!room[c])
            continue;
        uint64_t over = 0, sum = 0;
        for (int s = 0; s < ns; s++) {
            if (!valid[s])
                continue;
            uint32_t l = load[(size_t)s * cores + c];
            over += l >= ideal[s];
            sum += l;
        }
        uint64_t cost = (over << 32) + sum;
        if (best == UINT32_MAX || cost < bcost) {
            best = c;
            bcost = cost;
        }
    }
    return best;
}

/* Items per block: the product of the chunk counts of the dims after the first
 * sampled one (0: no dim after it is sampled, and round-robin is as good). */
static uint64_t deal_block(const IrGrid *gr, const int *nlen)
{
    int d0 = 0;
    while (d0 < gr->rank && !nlen[d0])
        d0++;
    uint64_t per = 1;
    bool later = false;
    for (int d = d0 + 1; d < gr->rank; d++) {
        per *= (uint64_t)deal_chunks(gr, d);
        later |= nlen[d] > 0;
    }
    return later ? per : 0;
}

/* Sets room[c] to the positions of block blk on core c: the block holds positions
 * [blk * per, (blk + 1) * per) of the round-robin sequence (position p on core p mod
 * cores). */
static void deal_room(uint64_t blk, uint64_t per, uint64_t n, uint32_t cores, uint32_t *room)
{
    memset(room, 0, cores * sizeof *room);
    for (uint64_t p = blk * per; p < (blk + 1) * per && p < n; p++)
        room[p % cores]++;
}

/* Adds (sign 1) or takes away (-1) item it's validity row from core c's loads. */
static void deal_load(uint32_t *load, const uint8_t *v, int ns, uint32_t cores, uint32_t c,
                      int sign)
{
    for (int s = 0; s < ns; s++)
        load[(size_t)s * cores + c] += (uint32_t)(sign * v[s]);
}

/* The sum over the samples of the most loaded core's load: what the deal lowers. */
static uint64_t deal_score(const uint32_t *load, int ns, uint32_t cores)
{
    uint64_t sum = 0;
    for (int s = 0; s < ns; s++) {
        uint32_t m = 0;
        for (uint32_t c = 0; c < cores; c++)
            m = load[(size_t)s * cores + c] > m ? load[(size_t)s * cores + c] : m;
        sum += m;
    }
    return sum;
}

/* Assigns the keyed items (sorted by block) to cores, block by block, each item to the
 * core deal_pick chooses among those of its block's positions (so every prefix of
 * the blocks stays as balanced as round-robin). The first round sees the blocks before
 * each; later rounds take each block out and place it again against all the others
 * (a block placed first cannot know which cores the later ones crowd). Keeps the round
 * of the least deal_score in item_core. */
static void deal_assign(IrKernel *k, const DealKey *key, const uint8_t *valid, int ns,
                        uint64_t per, const uint32_t *ideal, uint32_t *load, uint32_t *room,
                        uint32_t *cur)
{
    uint32_t cores = k->ncores;
    uint64_t n = k->nitems, best = UINT64_MAX;
    for (int round = 0; round < DEAL_ROUNDS; round++) {
        for (uint64_t i = 0, i1; i < n; i = i1) {
            for (i1 = i; i1 < n && key[i1].block == key[i].block; i1++)
                if (round)
                    deal_load(load, valid + (size_t)key[i1].item * ns, ns, cores,
                              cur[key[i1].item], -1);
            deal_room(key[i].block, per, n, cores, room);
            for (uint64_t j = i; j < i1; j++) {
                const uint8_t *v = valid + (size_t)key[j].item * (size_t)ns;
                uint32_t c = deal_pick(load, ideal, v, ns, room, cores);
                IR_ASSERT(c < cores);
                cur[key[j].item] = c;
                room[c]--;
                deal_load(load, v, ns, cores, c, 1);
            }
        }
        uint64_t sc = deal_score(load, ns, cores);
        if (sc < best) {
            best = sc;
            memcpy(k->item_core, cur, n * sizeof *cur);
        }
    }
}

bool plan_deal(IrGraph *g, IrKernel *k)
{
    int64_t len[IR_ITER_MAX][DEAL_STEPS];
    int nlen[IR_ITER_MAX];
    uint64_t n = k->nitems;
    uint32_t cores = k->ncores;
    int ns = deal_samples(g, k, len, nlen);
    uint64_t per = deal_block(&k->grid, nlen);
    if (!per || n > UINT32_MAX || n * cores * (uint64_t)ns > DEAL_WORK)
        return false;
    DealKey *key = malloc(n * sizeof *key);
    uint8_t *valid = malloc(n * (size_t)ns);
    uint32_t *load = calloc((size_t)ns * cores, sizeof *load);
    uint32_t *room = calloc(cores, sizeof *room), *ideal = calloc((size_t)ns, sizeof *ideal);
    uint32_t *cur = malloc(n * sizeof *cur);
    if (!key || !valid || !load || !room || !ideal || !cur) {
        free(key), free(valid), free(load), free(room), free(ideal), free(cur);
        return false;
    }
    for (uint64_t it = 0; it < n; it++) {
        uint8_t *v = valid + it * (size_t)ns;
        deal_item_valid(&k->grid, it, len, nlen, ns, v);
        key[it] = (DealKey){(uint32_t)it, 0, it / per};
        for (int s = 0; s < ns; s++) {
            key[it].count += v[s];
            ideal[s] += v[s];
        }
    }
    for (int s = 0; s < ns; s++)
        ideal[s] = (ideal[s] + cores - 1) / cores;
    qsort(key, n, sizeof *key, deal_key_cmp);
    k->item_core = ir_alloc(g, n * sizeof *k->item_core);
    deal_assign(k, key, valid, ns, per, ideal, load, room, cur);
    k->deal = ir_alloc(g, n * sizeof *k->deal);
    memset(room, 0, cores * sizeof *room);     /* positions: each core's items in order */
    for (uint64_t it = 0; it < n; it++)
        room[k->item_core[it]]++;
    k->core_first[0] = 0;
    for (uint32_t c = 0; c < cores; c++)
        k->core_first[c + 1] = k->core_first[c] + room[c];
    memset(room, 0, cores * sizeof *room);
    for (uint64_t it = 0; it < n; it++) {
        uint32_t c = k->item_core[it];
        k->deal[k->core_first[c] + room[c]++] = it;
    }
    free(key), free(valid), free(load), free(room), free(ideal), free(cur);
    return true;
}
