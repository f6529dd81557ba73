/* fe_names.c: an open-addressing string -> u32 map whose tables live in a graph's
 * arena (no frees: a grown table leaves the old one behind, at most doubling the
 * space used). Used for ONNX value names, which are looked up once per edge. */
#include <string.h>

#include "fe_internal.h"

/* FNV-1a hash of a NUL-terminated string. */
static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* An empty map; tables are allocated on first insert. */
void fe_map_init(FeMap *m, IrGraph *g)
{
    memset(m, 0, sizeof *m);
    m->g = g;
}

/* Slot of key, or of the empty slot where it would go. Assumes cap > n. */
static uint32_t find_slot(const FeMap *m, const char *key)
{
    uint32_t mask = m->cap - 1, i = hash_str(key) & mask;
    while (m->keys[i] && strcmp(m->keys[i], key) != 0)
        i = (i + 1) & mask;
    return i;
}

/* Look key up; true and *val set if present. */
bool fe_map_get(const FeMap *m, const char *key, uint32_t *val)
{
    if (m->cap == 0)
        return false;
    uint32_t i = find_slot(m, key);
    if (!m->keys[i])
        return false;
    if (val)
        *val = m->vals[i];
    return true;
}

/* Double the table (arena allocation) and re-insert everything. */
static void grow(FeMap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 8;
    IR_ASSERT(ncap > m->cap);
    const char **ok = m->keys;
    uint32_t *ov = m->vals, ocap = m->cap;
    m->keys = ir_alloc(m->g, (size_t)ncap * sizeof *m->keys);
    m->vals = ir_alloc(m->g, (size_t)ncap * sizeof *m->vals);
    m->cap = ncap;
    for (uint32_t i = 0; i < ocap; i++) {
        if (ok[i]) {
            uint32_t j = find_slot(m, ok[i]);
            m->keys[j] = ok[i];
            m->vals[j] = ov[i];
        }
    }
}

/* Insert key (or overwrite its value); keeps the load factor under 1/2. */
void fe_map_put(FeMap *m, const char *key, uint32_t val)
{
    if (2 * (m->n + 1) > m->cap)
        grow(m);
    uint32_t i = find_slot(m, key);
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->n++;
    }
    m->vals[i] = val;
}
