/* ir_arena.c: the graph's two arenas.
 *
 * g->arena holds everything that lives as long as the graph (values, nodes, constants,
 * the kernel plan). g->scratch holds the temporary arrays of one pass (work lists,
 * per-value marks, use counts): the pipeline driver releases it after every pass, so a
 * pass's scratch never outlives the pass. Both count towards g->arena_bytes and its
 * limit (--max-memory); allocation failure longjmps through ir_oom(). A block of at
 * least ARENA_HUGE bytes (a large constant) is mapped in huge pages (ir_huge.c).
 */
#include <stdlib.h>

#include "ir.h"

#define ARENA_BLOCK (256u * 1024u)
#define ARENA_HUGE ((size_t)2 << 20)       /* blocks from which ir_huge_alloc maps */

struct IrArenaBlock {
    IrArenaBlock *next;
    size_t size, used;                     /* bytes of data[] / bytes handed out */
    bool huge;                             /* from ir_huge_alloc, else calloc */
    _Alignas(16) unsigned char data[];
};

/* A zeroed block of total bytes (header included), or NULL. */
static IrArenaBlock *block_alloc(size_t total)
{
    IrArenaBlock *b = total >= ARENA_HUGE ? ir_huge_alloc(total) : NULL;
    if (b) {
        b->huge = true;
        return b;
    }
    return calloc(1, total);
}

static void block_free(IrArenaBlock *b)
{
    if (b && b->huge)
        ir_huge_free(b, sizeof(IrArenaBlock) + b->size);
    else
        free(b);
}

/* Allocate a new block of a with room for n bytes; big requests get their own block,
 * linked behind the current one so its free space is not lost. */
static void *arena_new_block(IrGraph *g, IrArena *a, size_t n)
{
    size_t size = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
    size_t total = sizeof(IrArenaBlock) + size;
    if (total < size || (g->arena_limit && (g->arena_bytes + total > g->arena_limit ||
                                            total > g->arena_limit)))
        ir_oom(g);
    IrArenaBlock *b = block_alloc(total);
    if (!b)
        ir_oom(g);
    b->size = size;
    b->used = n;
    g->arena_bytes += total;
    a->bytes += total;
    if (a->head && size != ARENA_BLOCK) {
        b->next = a->head->next;
        a->head->next = b;
    } else {
        b->next = a->head;
        a->head = b;
    }
    return b->data;
}

/* n zeroed bytes, 16-aligned, from arena a of graph g. */
void *ir_arena_alloc(IrGraph *g, IrArena *a, size_t n)
{
    if (n > SIZE_MAX - 64)
        ir_oom(g);
    n = (n + 15) & ~(size_t)15;
    if (n == 0)
        n = 16;
    IrArenaBlock *b = a->head;
    if (b && b->size - b->used >= n) {
        void *p = b->data + b->used;
        b->used += n;
        return p;                          /* zeroed and never reused: still zero */
    }
    return arena_new_block(g, a, n);
}

/* Free every block of arena a (g's byte count goes down by what a held). */
void ir_arena_release(IrGraph *g, IrArena *a)
{
    for (IrArenaBlock *b = a->head, *nx; b; b = nx) {
        nx = b->next;
        block_free(b);
    }
    g->arena_bytes -= a->bytes;
    a->head = NULL;
    a->bytes = 0;
}

/* Free the allocation p of n bytes from arena a of graph g when it has a block of its
 * own (a request above a quarter of a block: a large constant) and return true; false,
 * leaving it, when it shares a block. The block is unlinked wherever it is. */
bool ir_arena_free(IrGraph *g, IrArena *a, const void *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (n <= ARENA_BLOCK / 4)
        return false;
    for (IrArenaBlock **pb = &a->head; *pb; pb = &(*pb)->next) {
        IrArenaBlock *b = *pb;
        if (b->data != p || b->size != n)
            continue;
        size_t total = sizeof(IrArenaBlock) + b->size;
        *pb = b->next;
        block_free(b);
        g->arena_bytes -= total;
        a->bytes -= total;
        return true;
    }
    return false;
}

void *ir_alloc(IrGraph *g, size_t n)
{
    return ir_arena_alloc(g, &g->arena, n);
}

void *ir_scratch(IrGraph *g, size_t n)
{
    return ir_arena_alloc(g, &g->scratch, n);
}

void ir_scratch_reset(IrGraph *g)
{
    ir_arena_release(g, &g->scratch);
}
