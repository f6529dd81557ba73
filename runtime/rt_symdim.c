/* rt_symdim.c: bounded symbolic dimensions (bundle feature SPY_FEAT_DYNDIM, sbin.md
 * "Bounded dynamic dimensions").
 *
 * Such a bundle is planned for the upper bounds. Each DIMREFS entry says that one axis
 * of an input or output has, at run time, the size of a symbol within [min, max]. The
 * caller gives every input at its actual shape (spy_session_set_input_shape; the bound
 * when never set); the runtime derives the symbols from those shapes, checks them
 * (bounds, and agreement between inputs sharing a symbol), writes them into the hidden
 * SPY_TF_DIMS input that the kernels read to mask padding, and copies each input into a
 * buffer of its bound shape (the actual data at the start of every axis, zeros after).
 * After the run each symbolic output's valid box is moved to the row-major prefix of
 * its actual shape, which spy_session_output_shape reports (the rest of the buffer is
 * not written: nothing per run costs host time in proportion to the bounds).
 */
#include <stdio.h>
#include <string.h>

#include "rt_model.h"

/* Checks DIMREFS entry k of m; returns why it is malformed, or NULL (buf: scratch). */
static const char *check_ref(const spy_model *m, uint32_t k, char *buf, size_t len)
{
    const SpyDimRef *r = &m->dimrefs[k];
    if (r->tensor >= m->ntensors || r->tensor + 1 == m->ninputs)
        return snprintf(buf, len, "tensor %u is not a data input or output", r->tensor), buf;
    const SpyTensorDesc *t = &m->tensors[r->tensor];
    if (r->axis >= t->rank)
        return snprintf(buf, len, "axis %u of a rank-%u tensor", r->axis, t->rank), buf;
    if (r->sym >= m->nsyms)
        return snprintf(buf, len, "symbol %u of %u", r->sym, m->nsyms), buf;
    if (r->step && (!(m->hdr->features & SPY_FEAT_DIMSTEP) || r->step < 2))
        return "a step without feature DIMSTEP, or a step of 1";
    if (r->min < 1 || r->min > r->max || r->max != t->dims[r->axis])
        return snprintf(buf, len, "bounds [%lld, %lld] for an axis of %lld",
                        (long long)r->min, (long long)r->max, (long long)t->dims[r->axis]),
               buf;
    if (t->flags & (SPY_TF_DYNAMIC | SPY_TF_SHAPED | SPY_TF_HIDDEN))
        return "a dynamic, shaped or hidden output";
    if (m->io[r->tensor].sym[r->axis] >= 0)
        return "a second entry for the same axis";
    return NULL;
}

spy_status rt_sym_verify(spy_model *m, RtErr *e)
{
    for (uint32_t i = 0; i < m->ntensors; i++)
        memset(m->io[i].sym, -1, sizeof m->io[i].sym);
    const SpyTensorDesc *last = m->ninputs ? &m->tensors[m->ninputs - 1] : NULL;
    bool has_dims = last && (last->flags & SPY_TF_DIMS);
    bool feat = (m->hdr->features & SPY_FEAT_DYNDIM) != 0;
    m->nvis_in = m->ninputs - has_dims;
    if (feat != (m->dimrefs != NULL) || feat != has_dims)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "feature DYNDIM %s, section DIMREFS %s, dims "
                          "input %s: all three or none", feat ? "set" : "not set",
                          m->dimrefs ? "present" : "absent", has_dims ? "present" : "absent"),
               e->status;
    if (!feat && (m->hdr->features & SPY_FEAT_GUARDS))
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "feature GUARDS without bounded symbolic "
                          "dimensions (DYNDIM)"),
               e->status;
    if ((m->hdr->features & SPY_FEAT_RING_CLAMP) &&
        (m->hdr->features & (SPY_FEAT_GUARDS | SPY_FEAT_RING)) != (SPY_FEAT_GUARDS | SPY_FEAT_RING))
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "feature RING_CLAMP without GUARDS and RING"),
               e->status;
    m->guards = (m->hdr->features & SPY_FEAT_GUARDS) != 0;
    if (!feat)
        return SPY_OK;
    if (last->host_dtype != 6 || last->dev_dtype != 6 /* int32 */ || last->rank != 1 ||
        last->dims[0] < 1 || last->dims[0] > 64 || m->ndimrefs == 0)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "dims input '%s': not int32[1..64], or no "
                          "DIMREFS entries", m->io[m->ninputs - 1].info.name),
               e->status;
    m->nsyms = (uint32_t)last->dims[0];
    uint64_t seen = 0;
    for (uint32_t k = 0; k < m->ndimrefs; k++) {
        char buf[160];
        const char *why = check_ref(m, k, buf, sizeof buf);
        if (why)
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "DIMREFS entry %u (offset %llu): %s", k,
                              (unsigned long long)(m->sec[SPY_SEC_DIMREFS]->offset +
                                                   (uint64_t)k * sizeof(SpyDimRef)), why),
                   e->status;
        const SpyDimRef *r = &m->dimrefs[k];
        m->io[r->tensor].sym[r->axis] = (int8_t)r->sym;
        m->io[r->tensor].symbolic = true;
        if (r->tensor < m->ninputs)
            seen |= 1ull << r->sym;
    }
    if (seen != (m->nsyms == 64 ? ~0ull : (1ull << m->nsyms) - 1))
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "DIMREFS: a symbol no input axis gives"),
               e->status;
    return SPY_OK;
}

/* Byte offset, in a row-major buffer of dims dd (rank r, es-byte elements), of row k
 * of the box of dims ad at the start of every axis (rows: the innermost axis). */
static size_t box_row(size_t k, int r, const int64_t *dd, const int64_t *ad, size_t es)
{
    size_t off = 0, mul = es * (size_t)(r ? dd[r - 1] : 1);
    for (int i = r - 2; i >= 0; i--) {
        off += k % (size_t)ad[i] * mul;
        k /= (size_t)ad[i];
        mul *= (size_t)dd[i];
    }
    return off;
}

/* Copies the packed row-major box a (dims ad) into the zeroed buffer d of dims dd
 * (rank r, es-byte elements), at the start of every axis. */
static void expand(uint8_t *d, const uint8_t *a, int r, const int64_t *dd, const int64_t *ad,
                   size_t es, size_t dbytes)
{
    memset(d, 0, dbytes);
    size_t row = (size_t)(r ? ad[r - 1] : 1) * es, rows = 1;
    for (int i = 0; i + 1 < r; i++)
        rows *= (size_t)ad[i];
    for (size_t k = 0; k < rows && row; k++) {
        memcpy(d + box_row(k, r, dd, ad, es), a + k * row, row);
    }
}

spy_status rt_sym_inputs(const spy_model *m, const int64_t *in_dims, const void *const *inputs,
                         uint8_t *const *pad, const void **bound, int32_t *symv, char *err,
                         size_t errlen)
{
    for (uint32_t k = 0; k < m->nsyms; k++)
        symv[k] = -1;
    for (uint32_t i = 0; i < m->nvis_in; i++) {
        bound[i] = inputs[i];
        const RtIo *io = &m->io[i];
        for (int a = 0; io->symbolic && a < io->info.rank; a++) {
            int s = io->sym[a];
            int64_t v = in_dims[i * SPY_MAX_RANK + (uint32_t)a];
            if (s < 0)
                continue;
            const SpyDimRef *r = NULL;
            for (uint32_t k = 0; k < m->ndimrefs && !r; k++)
                if (m->dimrefs[k].tensor == i && m->dimrefs[k].axis == (uint32_t)a)
                    r = &m->dimrefs[k];
            if (r->step > 1 && v >= r->min && v <= r->max && (r->max - v) % r->step) {
                snprintf(err, errlen, "input '%s' axis %d: size %lld is not one this bundle "
                         "takes: %lld down by steps of %u to %lld (sizes derived from it "
                         "that the model joins, or that its windows must cover exactly, fit "
                         "only there)", io->info.name, a,
                         (long long)v, (long long)r->max, r->step, (long long)r->min);
                return SPY_E_INVALID_ARG;
            }
            if (v < r->min || v > r->max || (symv[s] >= 0 && symv[s] != v)) {
                snprintf(err, errlen, "input '%s' axis %d: size %lld %s", io->info.name, a,
                         (long long)v, v < r->min || v > r->max ? "outside its bounds"
                                                                : "differs from another "
                                                                  "input's size of that "
                                                                  "dimension");
                if (v < r->min || v > r->max)
                    snprintf(err + strlen(err), errlen - strlen(err), " [%lld, %lld]",
                             (long long)r->min, (long long)r->max);
                return SPY_E_INVALID_ARG;
            }
            symv[s] = (int32_t)v;
        }
        if (io->symbolic) {
            expand(pad[i], inputs[i], io->info.rank, io->info.dims, in_dims + i * SPY_MAX_RANK,
                   rt_dtype_size(io->info.dtype), io->info.nbytes);
            bound[i] = pad[i];
        }
    }
    return SPY_OK;
}

/* Moves the box of dims ad at the start of every axis of the row-major buffer p (dims
 * dd, rank r, es-byte elements) to its row-major prefix. Rows only move towards the
 * start, in order, so memmove suffices. The bytes after the prefix are left as they are
 * (spyrt.h: unspecified), so that the host time of a run follows the actual size, not
 * the bounds. */
static void compact_box(uint8_t *p, int r, const int64_t *dd, const int64_t *ad, size_t es)
{
    size_t row = (size_t)(r ? ad[r - 1] : 1) * es, rows = 1;
    for (int i = 0; i + 1 < r; i++)
        rows *= (size_t)ad[i];
    for (size_t k = 0; k < rows && row; k++) {
        memmove(p + k * row, p + box_row(k, r, dd, ad, es), row);
    }
}

void rt_sym_outputs(const spy_model *m, const int32_t *symv, void *const *outputs,
                    int64_t *dims)
{
    for (uint32_t i = m->ninputs; i < m->ninputs + m->nvisible; i++) {
        const RtIo *io = &m->io[i];
        if (!io->symbolic)
            continue;
        int64_t *ad = dims + (size_t)i * SPY_MAX_RANK;
        for (int a = 0; a < io->info.rank; a++)
            ad[a] = io->sym[a] >= 0 ? symv[io->sym[a]] : io->info.dims[a];
        compact_box(outputs[i - m->ninputs], io->info.rank, io->info.dims, ad,
                    rt_dtype_size(io->info.dtype));
    }
}

/* Bounds of axis `axis` of input i: 1 (and *min, *max) when it is a bounded symbolic
 * dimension, 0 when fixed, -1 on a bad argument. */
int spy_model_input_dim_bounds(const spy_model *m, int i, int axis, int64_t *min,
                               int64_t *max)
{
    if (!m || i < 0 || (uint32_t)i >= m->nvis_in || axis < 0 ||
        axis >= m->io[i].info.rank)
        return -1;
    for (uint32_t k = 0; k < m->ndimrefs; k++)
        if (m->dimrefs[k].tensor == (uint32_t)i && m->dimrefs[k].axis == (uint32_t)axis) {
            if (min)
                *min = m->dimrefs[k].min;
            if (max)
                *max = m->dimrefs[k].max;
            return 1;
        }
    return 0;
}
