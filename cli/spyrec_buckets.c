/* spyrec_buckets.c: size buckets for bounded dynamic dimensions (spyrec_buckets.h).
 *
 * Each bucket is the model compiled again from its file with the symbols' maximums
 * lowered to the bucket's box (FeOptions.sym_caps): planned exactly as the bound bundle
 * is for its bounds, with the same masks keeping the padding out of reductions. All
 * share one constant pool (passes/cpool.h): a constant identical to one placed before
 * keeps its offset, so weights are stored once; constants folded per bucket (position
 * ids) are appended. A bucket's bundle has an empty CONSTS section; the bytes it added
 * to the pool go into the bound bundle's CONSTS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spyrec_buckets.h"
#include "codegen/cg.h"
#include "frontend/fe.h"
#include "passes/pass.h"
#include "sbin.h"

/* Appends n bytes of d to the growing buffer (*p, *len, *cap). */
static bool append(uint8_t **p, size_t *len, size_t *cap, const void *d, size_t n)
{
    if (!n)                      /* nothing to add (the buffer may not exist yet) */
        return true;
    if (*len + n > *cap) {
        size_t nc = (*len + n) * 2;
        uint8_t *q = realloc(*p, nc);
        if (!q)
            return false;
        *p = q;
        *cap = nc;
    }
    if (d)
        memcpy(*p + *len, d, n);
    else
        memset(*p + *len, 0, n);
    *len += n;
    return true;
}

/* Compile the bucket of box caps (the symbols' names in names) with the pool; its
 * bundle into *bun, the bytes it added to the pool into *tail. Returns false when it
 * failed (its diagnostics printed as a warning). */
static bool compile_bucket(const Args *a, const SpyTarget *t, PassConstPool *pool,
                           const FeDimBound *caps, int ncaps, const char *meta, jmp_buf *oom,
                           uint8_t **bun, size_t *blen, uint8_t **tail, size_t *tlen)
{
    IrDiag diag;
    ir_diag_init(&diag, a->input);
    FeOptions fo = {.max_file_bytes = (size_t)2 << 30, .max_nesting = 64,
                    .arena_limit = a->max_memory, .specs = a->specs, .nspecs = a->nspecs,
                    .dim_bounds = a->dim_bounds, .ndim_bounds = a->ndim_bounds,
                    .sym_caps = caps, .nsym_caps = ncaps};
    IrGraph *g = fe_load_model(a->input, &diag, &fo);
    bool ok = g && !ir_failed(g) && !diag.nerrors;
    for (uint32_t i = 0; ok && i < g->nsymdims; i++)       /* every cap taken */
        for (int c = 0; c < ncaps; c++)
            if (!g->symdims[i].output && !strcmp(g->symdims[i].name, caps[c].param))
                ok &= g->symdims[i].max == caps[c].max;
    uint64_t base = pass_cpool_end(pool);
    if (ok) {
        g->oom = oom;
        g->diag = &diag;
        PassOptions po = {.opt_level = a->opt_level, .target = t, .dump_file = stderr,
                          .verify = a->verify, .precision = a->precision,
                          .keep_fp32 = a->keep_fp32, .cpool = pool};
        ok = pass_run_pipeline(g, &po) && !ir_failed(g);
    }
    if (ok) {
        CgOptions co = {.target = t, .meta = meta, .shared_consts = true, .const_base = base,
                        .const_tail = tail, .const_tail_len = tlen};
        ok = cg_emit_bundle(g, &co, bun, blen) && !ir_failed(g);
    }
    if (!ok) {
        fprintf(stderr, "%s: warning: size bucket", a->input);
        for (int c = 0; c < ncaps; c++)
            fprintf(stderr, " %s<=%lld", caps[c].param, (long long)caps[c].max);
        fprintf(stderr, " not compiled (the bounds serve its sizes)%s%s\n",
                diag.nmsgs ? ": " : "", diag.nmsgs ? diag.msgs[diag.nmsgs - 1] : "");
    }
    if (g) {
        g->oom = NULL;
        ir_graph_free(g);
    }
    ir_diag_free(&diag);
    return ok;
}

/* The symbols of g (its input entries, one per symbol) into caps (names, bounds and
 * steps); returns how many. */
static int symbols(const IrGraph *g, FeDimBound *caps, int64_t *min, int64_t *max)
{
    int n = 0;
    for (uint32_t i = 0; i < g->nsymdims; i++) {
        const IrSymDim *d = &g->symdims[i];
        if (d->output || d->sym >= 64 || caps[d->sym].param)
            continue;
        caps[d->sym] = (FeDimBound){d->name, d->min, d->max, d->step};
        min[d->sym] = d->min;
        max[d->sym] = d->max;
        n = d->sym + 1 > n ? d->sym + 1 : n;
    }
    return n;
}

/* Starts the VARIANTS section in out: its head and a table of nb entries (filled by
 * add_variant; count set at the end), padded to a 64-byte boundary. */
static bool variants_begin(CliBuckets *out, size_t *cap, int nb)
{
    size_t n = sizeof(SpyVariantsHead) + (size_t)nb * sizeof(SpyVariantDesc);
    n = (n + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN;
    return append(&out->variants, &out->variants_len, cap, NULL, n);
}

/* Appends bundle bun (len bytes) to the VARIANTS section as entry out->n. */
static bool add_variant(CliBuckets *out, size_t *cap, const uint8_t *bun, size_t len)
{
    size_t at = out->variants_len;
    if (!append(&out->variants, &out->variants_len, cap, bun, len) ||
        !append(&out->variants, &out->variants_len, cap, NULL,
                (len + SPY_SBIN_ALIGN - 1) / SPY_SBIN_ALIGN * SPY_SBIN_ALIGN - len))
        return false;
    SpyVariantDesc d = {.offset = at, .size = len};
    memcpy(out->variants + sizeof(SpyVariantsHead) + (size_t)out->n * sizeof d, &d, sizeof d);
    out->n++;
    return true;
}

/* The nb boxes of nsyms sizes each with every size of a symbol of step > 1 raised to
 * the next it takes (max - j * step, caps: the bounds and steps), a box that then
 * repeats an earlier one or is the bounds' own left out; returns how many remain. */
static int snap_boxes(int64_t *boxes, int nb, int nsyms, const FeDimBound *caps)
{
    int out = 0;
    for (int b = 0; b < nb; b++) {
        int64_t *x = boxes + (size_t)b * (size_t)nsyms;
        bool bound = true, seen = false;
        for (int s = 0; s < nsyms; s++) {
            if (caps[s].step > 1)
                x[s] = caps[s].max - (caps[s].max - x[s]) / caps[s].step * caps[s].step;
            bound &= x[s] == caps[s].max;
        }
        for (int p = 0; p < out && !seen; p++)
            seen = !memcmp(boxes + (size_t)p * (size_t)nsyms, x, (size_t)nsyms * sizeof *x);
        if (!bound && !seen)
            memmove(boxes + (size_t)out++ * (size_t)nsyms, x, (size_t)nsyms * sizeof *x);
    }
    return out;
}

/* Compiles every bucket of the grid and collects their bundles and constants. */
bool cli_buckets_build(const Args *a, const SpyTarget *t, IrGraph *bound, PassConstPool *pool,
                       const char *meta, jmp_buf *oom, CliBuckets *out)
{
    memset(out, 0, sizeof *out);
    out->extra_off = pass_cpool_end(pool);
    FeDimBound caps[64];
    int64_t min[64], max[64];
    memset(caps, 0, sizeof caps);
    int nsyms = symbols(bound, caps, min, max);
    for (int s = 0; s < nsyms; s++)
        if (!caps[s].param)
            return true;                   /* a symbol of outputs only: no buckets */
    int64_t *boxes = malloc((size_t)CLI_MAX_BUCKETS * (size_t)nsyms * sizeof *boxes);
    size_t ecap = 0, vcap = 0;
    int nb = boxes ? cli_bucket_grid(min, max, nsyms, a->dim_buckets, boxes, CLI_MAX_BUCKETS)
                   : 0;
    nb = snap_boxes(boxes, nb, nsyms, caps);
    bool ok = boxes && (!nb || variants_begin(out, &vcap, nb));
    pass_cpool_set_own(pool, true);
    for (int b = 0; ok && b < nb; b++) {
        for (int s = 0; s < nsyms; s++)
            caps[s].max = boxes[(size_t)b * (size_t)nsyms + (size_t)s];
        uint8_t *tail = NULL, *bun = NULL;
        size_t tlen = 0, blen = 0;
        bool built = compile_bucket(a, t, pool, caps, nsyms, meta, oom, &bun, &blen, &tail,
                                    &tlen);
        ok = !built || (append(&out->extra, &out->extra_len, &ecap, tail, tlen) &&
                        add_variant(out, &vcap, bun, blen));
        free(tail);
        free(bun);
        uint64_t have = out->extra_off + out->extra_len;   /* a failed bucket's part: 0 */
        ok = ok && append(&out->extra, &out->extra_len, &ecap, NULL,
                          (size_t)(pass_cpool_end(pool) - have));
    }
    if (ok && out->n)
        ((SpyVariantsHead *)out->variants)->count = (uint32_t)out->n;
    if (ok && !out->n) {                   /* no bucket compiled: no section */
        free(out->variants);
        out->variants = NULL;
        out->variants_len = 0;
    }
    free(boxes);
    return ok;
}

/* Frees what cli_buckets_build collected. */
void cli_buckets_free(CliBuckets *b)
{
    free(b->variants);
    free(b->extra);
    memset(b, 0, sizeof *b);
}
