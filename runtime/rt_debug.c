/* rt_debug.c: the bundle's DEBUG section (sbin.h SpyDebugDesc, sbin.md): the model's
 * names of the tensors that kernels store in DRAM, where they are and their device
 * dtype. The loader checks every entry before anything runs; a session reads an entry's
 * tensor, widened to float32, from inside the kernel hook of the kernel that writes it
 * (spy_session_set_kernel_hook), before the memory planner's reuse of its DRAM by a
 * later kernel can overwrite it. This is what spyrun --compare is built on.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtconv.h"
#include "rt_exec.h"
#include "rt_model.h"

/* Byte range [*lo, *hi) that the elements of entry d cover (an empty tensor: none, at
 * its offset); false when a dimension or stride is beyond 2^40 (no real tensor).
 * Computed in 128 bits, so no product overflows. */
static bool debug_range(const SpyDebugDesc *d, __int128 *lo, __int128 *hi) {
    const int64_t lim = (int64_t)1 << 40;
    __int128 min = 0, max = 0, es = rt_dtype_size(d->dtype);
    bool empty = false;
    for (int k = 0; k < d->rank; k++) {
        if (d->dims[k] < 0 || d->dims[k] > lim || d->strides[k] < -lim || d->strides[k] > lim)
            return false;
        empty |= d->dims[k] == 0;
        __int128 span = (__int128)(d->dims[k] > 0 ? d->dims[k] - 1 : 0) * d->strides[k];
        if (span < 0)
            min += span;
        else
            max += span;
    }
    *lo = (__int128)d->offset + min * es;
    *hi = (__int128)d->offset + max * es + es;
    if (empty)
        *lo = *hi = d->offset;
    return true;
}

/* Bytes of entry d's elements (dims already checked to be at most 2^40 each), capped
 * at 2^100 so that the product cannot overflow: more than any segment holds. A kernel
 * output's elements are distinct, so they never need more bytes than the segment has. */
static __int128 numel_bytes(const SpyDebugDesc *d) {
    __int128 n = rt_dtype_size(d->dtype);
    for (int k = 0; k < d->rank; k++) {
        n *= d->dims[k];
        if (n > ((__int128)1 << 100))
            return (__int128)1 << 100;
    }
    return n;
}

/* Why entry d is wrong (NULL when it is fine), written into buf. */
static const char *debug_entry_error(const spy_model *m, const SpyDebugDesc *d, char *buf,
                                     size_t n) {
    static const uint8_t zero[8];
    __int128 lo, hi;
    if (d->name >= m->strings_size || m->strings[d->name] == 0)
        snprintf(buf, n, "name offset %u is not a string of STRINGS", d->name);
    else if (d->kernel >= m->nkernels)
        snprintf(buf, n, "kernel %u out of range (%u kernels)", d->kernel, m->nkernels);
    else if (d->seg == 0 || d->seg >= m->nsegs ||
             (m->segs[d->seg].kind == SPY_SEGK_IO && m->segs[d->seg].tensor < m->ninputs))
        snprintf(buf, n, "segment %u is not the arena or an output segment", d->seg);
    else if (!spy_debug_dtype_ok(d->dtype))
        snprintf(buf, n, "dtype %u is not one a debug tensor may have", d->dtype);
    else if (d->rank > SPY_SBIN_MAX_RANK)
        snprintf(buf, n, "rank %u above %d", d->rank, SPY_SBIN_MAX_RANK);
    else if (memcmp(d->reserved0, zero, sizeof d->reserved0) ||
             memcmp(d->reserved, zero, sizeof d->reserved))
        snprintf(buf, n, "reserved bytes are not zero");
    else if (!debug_range(d, &lo, &hi))
        snprintf(buf, n, "dims or strides out of range");
    else if (numel_bytes(d) > m->segs[d->seg].size)
        snprintf(buf, n, "its elements need more bytes than segment %u has (%llu)", d->seg,
                 (unsigned long long)m->segs[d->seg].size);
    else if (lo < 0 || hi > m->segs[d->seg].size)
        snprintf(buf, n, "byte range [%lld, %lld) outside segment %u (%llu bytes)",
                 (long long)lo, (long long)hi, d->seg,
                 (unsigned long long)m->segs[d->seg].size);
    else
        return NULL;
    return buf;
}

/* Refuses two entries of one name. */
static spy_status debug_unique(spy_model *m, uint32_t n, RtErr *e) {
    RtNameIdx *idx = malloc(((size_t)n + 1) * sizeof *idx);
    if (!idx)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    for (uint32_t i = 0; i < n; i++)
        idx[i] = (RtNameIdx){rt_str(m, m->debug[i].name), i};
    qsort(idx, n, sizeof *idx, rt_cmp_name_idx);
    for (uint32_t i = 1; i < n && !e->status; i++)
        if (!strcmp(idx[i - 1].name, idx[i].name))
            rt_err_set(e, SPY_E_BAD_BUNDLE, "DEBUG entries %u and %u share the name '%s'",
                       idx[i - 1].idx, idx[i].idx, idx[i].name);
    free(idx);
    return e->status;
}

/* Checks the DEBUG section (see rt_model.h). */
spy_status rt_debug_verify(spy_model *m, RtErr *e) {
    bool feat = (m->hdr->features & SPY_FEAT_DEBUG) != 0;
    if (feat != (m->debug != NULL))
        return rt_err_set(e, SPY_E_BAD_BUNDLE,
                          "offset 12: feature bit DEBUG is %s but the DEBUG section is %s",
                          feat ? "set" : "clear", m->debug ? "there" : "missing"),
               e->status;
    if (!m->debug)
        return SPY_OK;
    uint64_t base = m->sec[SPY_SEC_DEBUG]->offset;
    if (m->debug_bytes % sizeof(SpyDebugDesc) || m->debug_bytes / sizeof(SpyDebugDesc) > UINT32_MAX)
        return rt_err_set(e, SPY_E_BAD_BUNDLE,
                          "section DEBUG at offset %llu: size %llu is not a multiple of its "
                          "%zu-byte entries",
                          (unsigned long long)base, (unsigned long long)m->debug_bytes,
                          sizeof(SpyDebugDesc)),
               e->status;
    uint32_t n = (uint32_t)(m->debug_bytes / sizeof(SpyDebugDesc));
    for (uint32_t i = 0; i < n; i++) {
        char why[200];
        const SpyDebugDesc *d = &m->debug[i];
        if (debug_entry_error(m, d, why, sizeof why))
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "DEBUG entry %u '%s' (offset %llu): %s", i,
                              d->name < m->strings_size ? rt_str(m, d->name) : "?",
                              (unsigned long long)(base + (uint64_t)i * sizeof *d), why),
                   e->status;
    }
    if (debug_unique(m, n, e))
        return e->status;
    m->ndebug = n;
    return e->status;
}

/* Entries of the DEBUG section; -1 without one. */
int spy_model_num_debug_tensors(const spy_model *m) {
    return !m || !m->debug ? -1 : (int)m->ndebug;
}

/* Name, writing kernel, device dtype and shape of debug tensor i. */
spy_status spy_model_debug_tensor_info(const spy_model *m, int i, spy_debug_tensor_info *info) {
    if (!m || !info || i < 0 || (uint32_t)i >= m->ndebug)
        return SPY_E_INVALID_ARG;
    const SpyDebugDesc *d = &m->debug[i];
    memset(info, 0, sizeof *info);
    info->name = rt_str(m, d->name);
    info->kernel = (int)d->kernel;
    info->dtype = d->dtype;
    info->rank = d->rank;
    info->numel = 1;
    for (int k = 0; k < d->rank; k++) {
        info->dims[k] = d->dims[k];
        info->numel *= (size_t)d->dims[k];
    }
    return SPY_OK;
}

/* Element at p of device dtype dt as a float. */
static float dev_to_f32(int dt, const uint8_t *p) {
    uint16_t h;
    int32_t i;
    float f;
    switch (dt) {
    case ISA_DT_F32: memcpy(&f, p, 4); return f;
    case ISA_DT_DLF16: memcpy(&h, p, 2); return spy_dlf16_to_f32(h);
    case ISA_DT_F16: memcpy(&h, p, 2); return rt_f16_to_f32(h);
    case ISA_DT_BF16: memcpy(&h, p, 2); return rt_bf16_to_f32(h);
    case ISA_DT_I32: memcpy(&i, p, 4); return (float)i;
    case ISA_DT_I16: { int16_t v; memcpy(&v, p, 2); return v; }
    case ISA_DT_I8: return (float)(int8_t)p[0];
    default: return p[0];                  /* U8, BOOL */
    }
}

/* Debug tensor i as float32, row-major, from the session's DRAM: only inside the hook
 * of the kernel that writes it (after that kernel, before any later one). */
spy_status spy_session_read_debug_tensor(const spy_session *s, int i, float *dst, size_t n) {
    if (!s || !dst)
        return SPY_E_INVALID_ARG;
    const spy_model *m = rt_session_model(s);
    if (i < 0 || (uint32_t)i >= m->ndebug)
        return SPY_E_INVALID_ARG;
    const SpyDebugDesc *d = &m->debug[i];
    spy_debug_tensor_info info;
    spy_model_debug_tensor_info(m, i, &info);
    if (n < info.numel || rt_session_hook_kernel(s) != (int)d->kernel)
        return SPY_E_INVALID_ARG;          /* too small, or not in its kernel's hook */
    const uint8_t *base = rt_session_seg(s, d->seg);
    unsigned es = rt_dtype_size(d->dtype);
    int64_t idx[SPY_SBIN_MAX_RANK] = {0};
    for (size_t e = 0; e < info.numel; e++) {
        int64_t el = 0;
        for (int k = 0; k < d->rank; k++)
            el += idx[k] * d->strides[k];
        dst[e] = dev_to_f32(d->dtype, base + d->offset + el * (int64_t)es);
        for (int k = d->rank - 1; k >= 0 && ++idx[k] == d->dims[k]; k--)
            idx[k] = 0;
    }
    return SPY_OK;
}
