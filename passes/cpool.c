/* cpool.c: the constant pool shared by the size buckets of one bundle (cpool.h).
 * Entries are found by a hash of (dtype, shape, layout, bytes) in an open-addressed
 * table and confirmed by comparing the bytes, so only identical constants share.
 */
#include <stdlib.h>
#include <string.h>

#include "cpool.h"

typedef struct {
    uint64_t hash;
    IrType type;
    int lay;
    uint64_t bytes;                /* aligned device bytes it takes in the pool */
    size_t nraw;                   /* host bytes of data */
    const void *data;              /* the graph's data, or an owned copy */
    bool owned;
    int64_t off;
} Entry;

struct PassConstPool {
    Entry *e;
    uint32_t n, cap;               /* entries; cap: a power of two, or 0 */
    uint64_t end;
    bool own;
};

/* An empty pool (cpool.h). */
PassConstPool *pass_cpool_new(void)
{
    return calloc(1, sizeof(PassConstPool));
}

/* Whether constants added from now on are copied (their graph is freed first). */
void pass_cpool_set_own(PassConstPool *p, bool own)
{
    p->own = own;
}

/* Frees the pool and the copies it owns (NULL is ignored). */
void pass_cpool_free(PassConstPool *p)
{
    if (!p)
        return;
    for (uint32_t i = 0; i < p->cap; i++)
        if (p->e[i].owned)
            free((void *)p->e[i].data);
    free(p->e);
    free(p);
}

/* Bytes the pool holds. */
uint64_t pass_cpool_end(const PassConstPool *p)
{
    return p->end;
}

/* FNV-1a over n bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *d, size_t n)
{
    const uint8_t *b = d;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Does entry x hold the constant (t, lay, bytes, data of nraw bytes)? */
static bool same(const Entry *x, uint64_t h, const IrType *t, int lay, uint64_t bytes,
                 const void *data, size_t nraw)
{
    return x->hash == h && x->lay == lay && x->bytes == bytes && x->nraw == nraw &&
           x->type.dtype == t->dtype && x->type.rank == t->rank &&
           !memcmp(x->type.dims, t->dims, (size_t)t->rank * sizeof t->dims[0]) &&
           (!nraw || !memcmp(x->data, data, nraw));
}

/* Doubles the table (rehashing every entry). */
static bool grow(PassConstPool *p)
{
    uint32_t cap = p->cap ? p->cap * 2 : 64;
    Entry *ne = calloc(cap, sizeof *ne);
    if (!ne)
        return false;
    for (uint32_t i = 0; i < p->cap; i++) {
        if (p->e[i].off < 0 || !p->e[i].bytes)
            continue;
        uint32_t j = (uint32_t)p->e[i].hash & (cap - 1);
        while (ne[j].bytes)
            j = (j + 1) & (cap - 1);
        ne[j] = p->e[i];
    }
    free(p->e);
    p->e = ne;
    p->cap = cap;
    return true;
}

/* The pool offset of constant v (cpool.h): an identical entry's, else a new one at the
 * end. */
int64_t pass_cpool_place(PassConstPool *p, IrGraph *g, ValId v, int lay, uint64_t bytes)
{
    const IrValue *val = ir_val(g, v);
    size_t nraw = ir_type_bytes(&val->type);
    uint64_t h = fnv(0xcbf29ce484222325ull, &val->type.dtype, sizeof val->type.dtype);
    h = fnv(h, val->type.dims, (size_t)val->type.rank * sizeof val->type.dims[0]);
    h = fnv(h, &lay, sizeof lay);
    h = fnv(h, val->data, val->data ? nraw : 0) | 1;
    if (!bytes)
        return (int64_t)p->end;
    if ((p->n + 1) * 2 > p->cap && !grow(p))
        return -1;
    uint32_t j = (uint32_t)h & (p->cap - 1);
    for (; p->e[j].bytes; j = (j + 1) & (p->cap - 1))
        if (same(&p->e[j], h, &val->type, lay, bytes, val->data, val->data ? nraw : 0))
            return p->e[j].off;
    Entry *x = &p->e[j];
    *x = (Entry){h, val->type, lay, bytes, val->data ? nraw : 0, val->data, false,
                 (int64_t)p->end};
    if (p->own && x->nraw) {
        void *copy = malloc(x->nraw);
        if (!copy) {
            x->bytes = 0;
            return -1;
        }
        memcpy(copy, val->data, x->nraw);
        x->data = copy;
        x->owned = true;
    }
    p->n++;
    p->end += bytes;
    return x->off;
}
