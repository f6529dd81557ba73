/* rt_dyn.c: graph outputs whose extent along one axis is data-dependent (NonZero,
 * Compress, Unique, NonMaxSuppression), bundle format 1.1 (sbin.h SPY_TF_*).
 *
 * Such an output is computed on the device at its upper-bound dims; only the box
 * [0, count) along its axis is valid, and count is an int32 the device stores at
 * (count_seg, count_off), normally in a hidden output (SPY_TF_HIDDEN, after every
 * visible output, bound to a staging buffer, never shown to the caller). After a run
 * the valid box is moved, in the caller's buffer, to the row-major prefix of the actual
 * shape and the rest of the buffer is zeroed; spy_session_output_shape reports it.
 * An output whose whole shape is computed at run time (SPY_TF_SHAPED: Reshape, Squeeze,
 * Unsqueeze or a reduction whose shape or axes are runtime inputs) has its int32 dims
 * there instead; the device already wrote its data as their row-major prefix.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rt_model.h"

/* Checks the SPY_TF_* fields of tensor i; sets io->dyn_axis. */
static spy_status verify_one(spy_model *m, uint32_t i, RtErr *e) {
    const SpyTensorDesc *t = &m->tensors[i];
    RtIo *io = &m->io[i];
    const char *why = NULL;
    char buf[200];
    io->dyn_axis = -1;
    unsigned unknown = t->flags & ~(SPY_TF_DYNAMIC | SPY_TF_HIDDEN | SPY_TF_SHAPED |
                                    (t->role == SPY_ROLE_INPUT ? SPY_TF_DIMS : 0));
    unsigned kinds = !!(t->flags & SPY_TF_DYNAMIC) + !!(t->flags & SPY_TF_HIDDEN) +
                     !!(t->flags & SPY_TF_SHAPED);
    uint64_t need = t->flags & SPY_TF_SHAPED ? 4u * t->rank : 4u;
    if (unknown)
        snprintf(buf, sizeof buf, "unknown flags 0x%x", unknown), why = buf;
    else if (t->flags & ~SPY_TF_DIMS && t->role != SPY_ROLE_OUTPUT)
        why = "flags on an input";
    else if ((t->flags & SPY_TF_DIMS) && i + 1 != m->ninputs)
        why = "a dims input that is not the last input";
    else if (kinds > 1)
        why = "more than one of dynamic, shaped and hidden";
    else if ((t->flags & SPY_TF_SHAPED) && (t->rank == 0 || t->dims[0] != (int64_t)t->numel))
        why = "a shaped output whose dims are not [numel, 1, ...]";
    else if (!(t->flags & SPY_TF_HIDDEN) && i > m->ninputs && m->io[i - 1].hidden)
        why = "a visible output after a hidden one";
    else if ((t->flags & SPY_TF_DYNAMIC) && t->dyn_axis >= t->rank)
        snprintf(buf, sizeof buf, "dynamic axis %u of a rank-%u tensor", t->dyn_axis, t->rank),
            why = buf;
    else if ((t->flags & (SPY_TF_DYNAMIC | SPY_TF_SHAPED)) && t->count_seg >= m->nsegs)
        snprintf(buf, sizeof buf, "count segment %u out of range (%u segments)", t->count_seg,
                 m->nsegs), why = buf;
    else if ((t->flags & (SPY_TF_DYNAMIC | SPY_TF_SHAPED)) &&
             (t->count_off > m->segs[t->count_seg].size ||
              m->segs[t->count_seg].size - t->count_off < need))
        snprintf(buf, sizeof buf, "count at offset %llu outside segment %u (%llu bytes)",
                 (unsigned long long)t->count_off, t->count_seg,
                 (unsigned long long)m->segs[t->count_seg].size), why = buf;
    if (why)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "TENSORS entry %u '%s' (offset %llu): %s", i,
                          io->info.name,
                          (unsigned long long)(m->sec[SPY_SEC_TENSORS]->offset +
                                               (uint64_t)i * sizeof *t),
                          why),
               e->status;
    if (t->flags & SPY_TF_DYNAMIC)
        io->dyn_axis = t->dyn_axis;
    if (t->flags & SPY_TF_SHAPED)
        io->dyn_axis = SPY_DYN_SHAPE;
    return SPY_OK;
}

spy_status rt_dyn_verify(spy_model *m, RtErr *e) {
    m->nvisible = m->noutputs;
    for (uint32_t i = 0; i < m->ntensors; i++) {
        if (verify_one(m, i, e))
            return e->status;
        if (i >= m->ninputs && m->io[i].hidden && m->nvisible == m->noutputs)
            m->nvisible = i - m->ninputs;
    }
    return SPY_OK;
}

/* Moves the box [0, c) along axis a of a row-major buffer with dims d (rank r, es-byte
 * elements, nbytes in all) to the prefix of shape d with d[a] = c; zeroes the rest. */
static void compact(uint8_t *p, size_t nbytes, int r, const int64_t *d, int a, int64_t c,
                    size_t es) {
    size_t outer = 1, inner = es;
    for (int i = 0; i < a; i++)
        outer *= (size_t)d[i];
    for (int i = a + 1; i < r; i++)
        inner *= (size_t)d[i];
    size_t src_blk = (size_t)d[a] * inner, dst_blk = (size_t)c * inner;
    for (size_t o = 1; o < outer && dst_blk; o++)   /* block 0 is already in place */
        memmove(p + o * dst_blk, p + o * src_blk, dst_blk);
    size_t used = outer * dst_blk;
    if (used < nbytes)
        memset(p + used, 0, nbytes - used);
}

/* Output i whose whole shape the device computed (SPY_TF_SHAPED): reads its rank int32
 * dims into dims, checks them against its capacity and zeroes the buffer after the
 * row-major prefix they cover. */
static spy_status shaped_output(const RtIo *io, const uint8_t *at, void *buf, int64_t *dims,
                                char *err, size_t errlen) {
    uint64_t n = 1, cap = io->info.dims[0];
    bool over = false;
    for (int d = 0; d < io->info.rank; d++) {
        int32_t v;
        memcpy(&v, at + 4 * d, 4);
        if (v < 0) {
            snprintf(err, errlen, "output '%s': computed dimension %d is %d (the shape or "
                     "axes inputs do not give a valid shape)", io->info.name, d, v);
            return SPY_E_RUNTIME;
        }
        over |= __builtin_mul_overflow(n, (uint64_t)v, &n);
        dims[d] = v;
    }
    if (over || n > cap) {
        snprintf(err, errlen, "output '%s': computed shape has %s%llu elements, more than its "
                 "capacity %llu", io->info.name, over ? "more than " : "",
                 (unsigned long long)n, (unsigned long long)cap);
        return SPY_E_RUNTIME;
    }
    size_t used = (size_t)n * rt_dtype_size(io->info.dtype);
    if (used < io->info.nbytes)
        memset((uint8_t *)buf + used, 0, io->info.nbytes - used);
    return SPY_OK;
}

spy_status rt_dyn_outputs(const spy_model *m, uint8_t *const *seg, void *const *outputs,
                          int64_t *dims, char *err, size_t errlen) {
    for (uint32_t i = m->ninputs; i < m->ninputs + m->nvisible; i++) {
        const RtIo *io = &m->io[i];
        if (io->dyn_axis == SPY_DYN_SHAPE) {
            spy_status st = shaped_output(io, seg[io->desc->count_seg] + io->desc->count_off,
                                          outputs[i - m->ninputs], dims + i * SPY_MAX_RANK,
                                          err, errlen);
            if (st != SPY_OK)
                return st;
            continue;
        }
        if (io->dyn_axis < 0)
            continue;
        int32_t c;
        memcpy(&c, seg[io->desc->count_seg] + io->desc->count_off, 4);
        int64_t ub = io->info.dims[io->dyn_axis];
        if (c < 0 || c > ub) {
            snprintf(err, errlen, "output '%s': data-dependent extent %d of axis %d outside "
                     "[0, %lld]", io->info.name, c, io->dyn_axis, (long long)ub);
            return SPY_E_RUNTIME;
        }
        dims[i * SPY_MAX_RANK + (uint32_t)io->dyn_axis] = c;
        compact(outputs[i - m->ninputs], io->info.nbytes, io->info.rank, io->info.dims,
                io->dyn_axis, c, rt_dtype_size(io->info.dtype));
    }
    return SPY_OK;
}
