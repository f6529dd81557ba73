/* rt_variants.c: size buckets (bundle feature SPY_FEAT_VARIANTS, sbin.md "Size
 * buckets").
 *
 * A bundle with bounded symbolic dimensions may carry, in its VARIANTS section, complete
 * bundles compiled for smaller boxes of those dimensions (an empty CONSTS: they read
 * this bundle's). The loader verifies each like a file of its own, then that it serves
 * the same caller (inputs, outputs, symbols and their minimums; sizes at most this
 * bundle's). A session runs, of the buckets whose box holds the actual sizes and the
 * bundle itself, the one with the least modelled time at those sizes (with guards a
 * larger box may cost less: a batch of 2 images of 224x224 in a box of 8 such images
 * than in a box of 2 images of 256x256), chosen once per new tuple of sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_model.h"

/* Does bucket b serve the caller of m as m does? Returns why not, or NULL. */
static const char *check_same(const spy_model *m, const spy_model *b, char *buf, size_t len)
{
    if (memcmp(&b->target, &m->target, sizeof m->target))
        return "built for other target parameters";
    if (b->nvis_in != m->nvis_in || b->nvisible != m->nvisible || b->ninputs != m->ninputs ||
        b->nsyms != m->nsyms || b->ndimrefs != m->ndimrefs || b->nvariants)
        return "other inputs, outputs or symbols than the bundle's, or buckets of its own";
    for (uint32_t i = 0; i < m->ninputs + m->nvisible; i++) {
        const spy_tensor_info *x = &m->io[i].info, *y = &b->io[i].info;
        bool ok = !strcmp(x->name, y->name) && x->dtype == y->dtype && x->rank == y->rank &&
                  m->io[i].dyn_axis == b->io[i].dyn_axis;
        for (int d = 0; ok && d < x->rank; d++)     /* smaller on a symbolic axis, or on
                                                       one whose extent the device computes
                                                       (a size derived from the symbols),
                                                       or in capacity when it computes the
                                                       whole shape (symdim_out.c) */
            ok = y->dims[d] <= x->dims[d] &&
                 (m->io[i].sym[d] >= 0 || m->io[i].dyn_axis == d ||
                  m->io[i].dyn_axis == SPY_DYN_SHAPE || y->dims[d] == x->dims[d]);
        if (!ok)
            return snprintf(buf, len, "tensor %u '%s' differs from the bundle's (name, dtype, "
                            "rank, or a size above its)", i, x->name), buf;
    }
    for (uint32_t k = 0; k < m->ndimrefs; k++) {
        const SpyDimRef *x = &m->dimrefs[k], *y = &b->dimrefs[k];
        if (x->tensor != y->tensor || x->axis != y->axis || x->sym != y->sym ||
            x->min != y->min || y->max > x->max)
            return snprintf(buf, len, "DIMREFS entry %u differs from the bundle's (tensor, "
                            "axis, symbol, min, or a max above %lld)", k, (long long)x->max),
                   buf;
    }
    return NULL;
}

/* Checks the head and table of the VARIANTS section sec; returns why it is malformed,
 * or NULL. */
static const char *check_table(const SpySection *sec, const uint8_t *p, char *buf, size_t len)
{
    const SpyVariantsHead *h = (const SpyVariantsHead *)p;
    if (sec->size < sizeof *h)
        return "shorter than its 64-byte head";
    for (int i = 0; i < 15; i++)
        if (h->reserved[i])
            return "reserved head bytes not zero";
    uint64_t end = sizeof *h + (uint64_t)h->count * sizeof(SpyVariantDesc);
    if (h->count < 1 || h->count > 255 || end > sec->size)
        return snprintf(buf, len, "count %u outside 1..255, or its table past the section's "
                        "%llu bytes", h->count, (unsigned long long)sec->size), buf;
    const SpyVariantDesc *d = (const SpyVariantDesc *)(p + sizeof *h);
    for (uint32_t k = 0; k < h->count; k++) {
        uint64_t at = sec->offset + sizeof *h + (uint64_t)k * sizeof *d;
        if (d[k].reserved[0] || d[k].reserved[1])
            return snprintf(buf, len, "entry %u (offset %llu): reserved bytes not zero", k,
                            (unsigned long long)at), buf;
        const char *why = d[k].offset % SPY_SBIN_ALIGN ? "not 64-byte aligned"
                          : d[k].offset < end ? "before the end of the table or the previous "
                                                "bundle"
                          : d[k].size < sizeof(SpyHeader) ? "shorter than a bundle header"
                          : d[k].size > sec->size || d[k].offset > sec->size - d[k].size
                              ? "past the end of the section"
                              : NULL;
        if (why)
            return snprintf(buf, len, "entry %u (offset %llu): bundle [%llu, +%llu) %s (%llu "
                            "bytes)", k, (unsigned long long)at,
                            (unsigned long long)d[k].offset, (unsigned long long)d[k].size, why,
                            (unsigned long long)sec->size), buf;
        end = d[k].offset + d[k].size;
    }
    return NULL;
}

/* Verifies the VARIANTS table of m and loads, verifies and times each bucket, which
 * must then serve m's caller (check_same). */
spy_status rt_variants_load(spy_model *m, RtErr *e)
{
    const SpySection *sec = m->sec[SPY_SEC_VARIANTS];
    bool feat = (m->hdr->features & SPY_FEAT_VARIANTS) != 0;
    if (feat != (sec != NULL) || (feat && !m->nsyms) || (feat && m->parent))
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "feature VARIANTS %s, section VARIANTS %s, "
                          "%u symbols%s: the bit and the section go together, in a bundle "
                          "with bounded dimensions that is not itself a bucket",
                          feat ? "set" : "not set", sec ? "present" : "absent", m->nsyms,
                          m->parent ? " (a bucket)" : ""),
               e->status;
    if (!sec)
        return SPY_OK;
    char buf[RT_ERR_LEN];
    const uint8_t *p = m->file + sec->offset;
    const char *why = check_table(sec, p, buf, sizeof buf);
    if (why)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "section VARIANTS (offset %llu): %s",
                          (unsigned long long)sec->offset, why), e->status;
    uint32_t n = ((const SpyVariantsHead *)p)->count;
    const SpyVariantDesc *d = (const SpyVariantDesc *)(p + sizeof(SpyVariantsHead));
    if (!(m->variants = calloc(n, sizeof *m->variants)))
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    for (uint32_t k = 0; k < n; k++) {
        spy_model *b = calloc(1, sizeof *b);
        if (!b)
            return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
        m->variants[m->nvariants++] = b;
        b->parent = m;
        b->file = (uint8_t *)p + d[k].offset;
        b->size = (size_t)d[k].size;
        RtErr be = {SPY_OK, ""};
        if (rt_model_parse(b, &be) == SPY_OK && rt_verify_tables(b, &be) == SPY_OK &&
            rt_timing_compute(b, &be) == SPY_OK && rt_prep_model(b, &be) == SPY_OK &&
            rt_variants_load(b, &be) == SPY_OK &&
            (why = check_same(m, b, buf, sizeof buf)))
            rt_err_set(&be, SPY_E_BAD_BUNDLE, "%s", why);
        if (be.status != SPY_OK)
            return rt_err_set(e, be.status, "VARIANTS entry %u (bundle at offset %llu): %s", k,
                              (unsigned long long)(sec->offset + d[k].offset), be.msg),
                   e->status;
    }
    return SPY_OK;
}

/* The symbol sizes the input dims in_dims give (symv[s]); false when one is outside
 * m's bounds or inputs sharing a symbol disagree (the run then fails, naming them). */
static bool sym_sizes(const spy_model *m, const int64_t *in_dims, int32_t *symv)
{
    for (uint32_t s = 0; s < m->nsyms; s++)
        symv[s] = -1;
    for (uint32_t k = 0; k < m->ndimrefs; k++) {
        const SpyDimRef *r = &m->dimrefs[k];
        if (r->tensor >= m->nvis_in)
            continue;
        int64_t v = in_dims[(size_t)r->tensor * SPY_MAX_RANK + r->axis];
        if (v < r->min || v > r->max || (symv[r->sym] >= 0 && symv[r->sym] != v) ||
            (r->step > 1 && (r->max - v) % r->step))
            return false;
        symv[r->sym] = (int32_t)v;
    }
    return true;
}

/* The box of bucket b (or of the bounds): each symbol's largest size, into caps. */
static void box_caps(const spy_model *b, int64_t *caps)
{
    for (uint32_t s = 0; s < b->nsyms; s++)
        caps[s] = 0;
    for (uint32_t k = 0; k < b->ndimrefs; k++)
        if (b->dimrefs[k].tensor < b->nvis_in)
            caps[b->dimrefs[k].sym] = b->dimrefs[k].max;
}

/* Whether box a lies within box b (every symbol's cap at most b's). */
static bool box_within(const int64_t *a, const int64_t *b, uint32_t nsyms)
{
    for (uint32_t s = 0; s < nsyms; s++)
        if (a[s] > b[s])
            return false;
    return true;
}

/* Modelled time (us) of a run of b at the symbol sizes symv: with guards, that of the
 * instructions those sizes leave; without, its box's. */
static double time_at(const spy_model *b, const int32_t *symv)
{
    if (!b->guards)
        return b->device_us;
    double *kus = malloc(((size_t)b->nkernels + 1) * sizeof *kus);
    double us = kus ? rt_timing_guarded(b, symv, kus) : b->device_us;
    free(kus);
    return us;
}

/* The bucket of m for the symbol sizes symv (in m's bounds): of the boxes that hold
 * them (the buckets' and the bounds') and hold no other such box, the one with the
 * least modelled time at those sizes, the smaller box of a tie (a box around another
 * that holds the sizes is not tried: planned for more, it does not cost less; so a
 * run usually has one or two to time); -1: the bounds. *us gets its time (computed
 * only when need_us or there is a choice; else 0). */
static int pick(const spy_model *m, const int32_t *symv, bool need_us, double *us)
{
    uint32_t n = m->nvariants + 1, ns = m->nsyms, nc = 0;
    int64_t *caps = malloc((size_t)n * ns * sizeof *caps);
    int *cand = malloc((size_t)n * sizeof *cand);
    int best = (int)m->nvariants;
    double best_us = 0;
    for (uint32_t v = 0; caps && cand && v < n; v++) {
        const spy_model *b = v < m->nvariants ? m->variants[v] : m;
        box_caps(b, caps + (size_t)v * ns);
        bool holds = true;
        for (uint32_t s = 0; s < ns; s++)
            holds &= symv[s] <= caps[(size_t)v * ns + s];
        bool around = false;               /* holds a box already listed */
        for (uint32_t i = 0; holds && i < nc && !around; i++)
            around = box_within(caps + (size_t)cand[i] * ns, caps + (size_t)v * ns, ns);
        if (holds && !around)
            cand[nc++] = (int)v;
    }
    for (uint32_t i = 0; i < nc; i++) {
        double t = nc > 1 || need_us
                       ? time_at(cand[i] < (int)m->nvariants ? m->variants[cand[i]] : m, symv)
                       : 0;
        if (i == 0 || t < best_us) {
            best = cand[i];
            best_us = t;
        }
    }
    free(caps);
    free(cand);
    *us = nc || !need_us ? best_us : time_at(m, symv);   /* no memory: the bounds */
    return best == (int)m->nvariants ? -1 : best;
}

int rt_variant_pick(const spy_model *m, const int64_t *in_dims, RtPick *memo)
{
    int32_t symv[64];
    if (!m->nvariants || !sym_sizes(m, in_dims, symv))
        return -1;
    for (int i = 0; i < memo->n; i++)
        if (!memcmp(memo->key[i], symv, m->nsyms * sizeof *symv))
            return memo->v[i];
    double us;
    int i = memo->next;
    memo->v[i] = pick(m, symv, false, &us);
    memcpy(memo->key[i], symv, m->nsyms * sizeof *symv);
    memo->next = (i + 1) % RT_PICK_KEEP;
    memo->n += memo->n < RT_PICK_KEEP;
    return memo->v[i];
}

double spy_model_device_us_at(const spy_model *m, const int64_t *dims)
{
    int32_t symv[64];
    if (!m || !dims)
        return -1;
    if (!m->nsyms)
        return m->device_us;
    if (!sym_sizes(m, dims, symv))
        return -1;
    double us;
    pick(m, symv, true, &us);
    return us;
}

/* Number of size buckets of m besides its bounds (0: none). */
int spy_model_num_variants(const spy_model *m)
{
    return m ? (int)m->nvariants : 0;
}

/* Bucket v of m, a model of its own for the spy_model_* queries (its bounds, kernels,
 * modelled time); it lives as long as m. NULL when out of range. */
const spy_model *spy_model_variant(const spy_model *m, int v)
{
    return m && v >= 0 && (uint32_t)v < m->nvariants ? m->variants[v] : NULL;
}
