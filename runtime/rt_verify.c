/* rt_verify.c: one-pass verification of a bundle's tables after rt_load.c checked the
 * container: target parameters, strings, tensors, segments, kernels, programs,
 * schedule, every instruction, the optional self test. Builds the I/O binding table.
 * Any failure is SPY_E_BAD_BUNDLE (SPY_E_TARGET for unusable target parameters) with a
 * message naming the section, entry, kernel, core or instruction at fault.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtconv.h"
#include "rt_exec.h"
#include "rt_model.h"

#define RT_MAX_LX_BUDGET (256u << 20)
#define RT_MAX_CORES 1024u

/* String at offset off of STRINGS (verified NUL-terminated), or "?" when out of range. */
const char *rt_str(const spy_model *m, uint32_t off) {
    return off < m->strings_size ? m->strings + off : "?";
}

/* Checks the target parameters the timing model and the verifier depend on. */
static spy_status verify_target(spy_model *m, RtErr *e) {
    const SpyTarget *t = &m->target;
    const char *bad = NULL;
    if (!memchr(t->name, 0, sizeof t->name))
        bad = "name is not NUL-terminated";
    else if (t->cores == 0 || t->cores > RT_MAX_CORES)
        bad = "cores outside 1..1024";
    else if (t->corelets == 0 || t->stick_bytes == 0 || t->clock_mhz == 0)
        bad = "corelets, stick_bytes and clock_mhz must be positive";
    else if (t->lx_budget_bytes == 0 || t->lx_budget_bytes > t->lx_bytes ||
             t->lx_budget_bytes > RT_MAX_LX_BUDGET)
        bad = "lx_budget_bytes must be in 1..min(lx_bytes, 256 MiB)";
    else if (t->macs_fp16_per_cycle == 0 || t->fp32_mac_divisor == 0 ||
             t->int8_mac_multiplier == 0 || t->transcendental_factor == 0)
        bad = "matrix and vector rates must be positive";
    else if (t->dram_peak_mbps == 0 || t->dram_oneway_mbps == 0 || t->dram_mixed_mbps == 0)
        bad = "DRAM bandwidths must be positive";
    else if (t->overlap_permille > 1000)
        bad = "overlap_permille above 1000";
    else if (t->core_window_mib == 0)
        bad = "core_window_mib must be positive";
    if (bad)
        rt_err_set(e, SPY_E_TARGET, "header offset 40: target parameters unusable: %s", bad);
    return e->status;
}

/* Checks STRINGS is NUL-terminated and that off names a string in it. */
static bool str_ok(const spy_model *m, uint32_t off) {
    return off < m->strings_size;
}

/* Orders (name, index) pairs by name, then index (for duplicate detection). */
int rt_cmp_name_idx(const void *a, const void *b) {
    const RtNameIdx *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Checks one tensor descriptor (not its segment) and fills its RtIo entry. */
static spy_status verify_tensor(spy_model *m, uint32_t i, RtErr *e) {
    const SpyTensorDesc *t = &m->tensors[i];
    uint64_t at = m->sec[SPY_SEC_TENSORS]->offset + (uint64_t)i * sizeof *t;
    const char *nm = str_ok(m, t->name) ? rt_str(m, t->name) : "?";
#define TFAIL(...)                                                                         \
    do {                                                                                   \
        char why_[200];                                                                    \
        snprintf(why_, sizeof why_, __VA_ARGS__);                                          \
        rt_err_set(e, SPY_E_BAD_BUNDLE, "TENSORS entry %u '%s' (offset %llu): %s", i, nm,  \
                   (unsigned long long)at, why_);                                          \
        return e->status;                                                                  \
    } while (0)
    if (!str_ok(m, t->name))
        TFAIL("name offset %u outside STRINGS", t->name);
    bool want_in = i < m->ninputs;
    if (t->role != (want_in ? SPY_ROLE_INPUT : SPY_ROLE_OUTPUT))
        TFAIL("role %u (inputs must precede outputs)", t->role);
    if (t->rank > SPY_SBIN_MAX_RANK)
        TFAIL("rank %u > %d", t->rank, SPY_SBIN_MAX_RANK);
    if (t->layout != 0)
        TFAIL("unknown layout %u", t->layout);
    uint64_t n = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->dims[d] < 0)
            TFAIL("dim %d is negative (%lld)", d, (long long)t->dims[d]);
        if (t->dims[d] && n > ((uint64_t)1 << 56) / (uint64_t)t->dims[d])
            TFAIL("element count overflows");
        n *= (uint64_t)t->dims[d];
    }
    if (n != t->numel)
        TFAIL("numel %llu differs from the product of dims %llu",
              (unsigned long long)t->numel, (unsigned long long)n);
    unsigned hs = rt_dtype_size(t->host_dtype), ds = rt_dtype_size(t->dev_dtype);
    if (!hs || !ds || !rt_io_pair_ok(t->role, t->host_dtype, t->dev_dtype))
        TFAIL("host dtype %u / device dtype %u not a supported pair", t->host_dtype,
              t->dev_dtype);
    if (t->seg < ISA_SEG_IO0 || t->seg >= m->nsegs)
        TFAIL("segment %u is not an I/O segment (%u segments)", t->seg, m->nsegs);
#undef TFAIL
    RtIo *io = &m->io[i];
    io->desc = t;
    io->seg = t->seg;
    io->info.name = nm;
    io->info.dtype = t->host_dtype;
    io->info.rank = t->rank;
    for (int d = 0; d < t->rank; d++)
        io->info.dims[d] = t->dims[d];
    io->info.nbytes = (size_t)(n * hs);
    io->dev_bytes = (size_t)(n * ds);
    io->hidden = (t->flags & (SPY_TF_HIDDEN | SPY_TF_DIMS)) != 0; /* rt_dyn_verify */
    io->direct = !io->hidden && !spy_dt_subbyte_int(t->host_dtype) && /* range-checked */
                 (t->host_dtype == t->dev_dtype || (t->host_dtype == 9 && ds == 1));
    if (!io->direct)
        m->staging_bytes += (io->dev_bytes + 63) & ~(size_t)63;
    return SPY_OK;
}

/* Checks the TENSORS table: order, fields, unique names. */
static spy_status verify_tensors(spy_model *m, RtErr *e) {
    if (m->strings_size && m->strings[m->strings_size - 1] != 0)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "section STRINGS does not end with NUL"),
               e->status;
    while (m->ninputs < m->ntensors && m->tensors[m->ninputs].role == SPY_ROLE_INPUT)
        m->ninputs++;
    m->noutputs = m->ntensors - m->ninputs;
    m->io = calloc(m->ntensors ? m->ntensors : 1, sizeof *m->io);
    if (!m->io)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    for (uint32_t i = 0; i < m->ntensors; i++)
        if (verify_tensor(m, i, e))
            return e->status;
    RtNameIdx *idx = malloc((m->ntensors + 1) * sizeof *idx);
    if (!idx)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    for (uint32_t i = 0; i < m->ntensors; i++)
        idx[i] = (RtNameIdx){rt_str(m, m->tensors[i].name), i};
    qsort(idx, m->ntensors, sizeof *idx, rt_cmp_name_idx);
    for (uint32_t i = 1; i < m->ntensors && !e->status; i++)
        if (strcmp(idx[i - 1].name, idx[i].name) == 0)
            rt_err_set(e, SPY_E_BAD_BUNDLE, "TENSORS entries %u and %u share the name '%s'",
                       idx[i - 1].idx, idx[i].idx, idx[i].name);
    free(idx);
    return e->status;
}

/* Checks the SEGMENTS table against CONSTS and TENSORS. */
static spy_status verify_segments(spy_model *m, RtErr *e) {
    uint64_t base = m->sec[SPY_SEC_SEGMENTS]->offset;
    if (m->nsegs < 2)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "SEGMENTS has %u entries, needs at least 2",
                          m->nsegs),
               e->status;
    for (uint32_t i = 0; i < m->nsegs; i++) {
        const SpySegmentDesc *s = &m->segs[i];
        uint32_t want = i == 0 ? SPY_SEGK_CONST : i == 1 ? SPY_SEGK_ARENA : SPY_SEGK_IO;
        const char *why = NULL;
        char buf[160];
        if (s->kind != want)
            snprintf(buf, sizeof buf, "kind %u, expected %u", s->kind, want), why = buf;
        else if (i == 0 && s->size != m->consts_size)
            snprintf(buf, sizeof buf, "constant segment size %llu != CONSTS size %llu",
                     (unsigned long long)s->size, (unsigned long long)m->consts_size),
                why = buf;
        else if (i == 1 && s->size > ((uint64_t)m->target.dram_gib + 1) << 30)
            snprintf(buf, sizeof buf, "arena of %llu bytes exceeds device memory",
                     (unsigned long long)s->size), why = buf;
        else if (i >= 2 && s->tensor >= m->ntensors)
            snprintf(buf, sizeof buf, "tensor %u out of range", s->tensor), why = buf;
        else if (i >= 2 && m->tensors[s->tensor].seg != i)
            snprintf(buf, sizeof buf, "tensor %u points to segment %u",
                     s->tensor, m->tensors[s->tensor].seg), why = buf;
        else if (i >= 2 && s->size != m->io[s->tensor].dev_bytes)
            snprintf(buf, sizeof buf, "size %llu != %zu bytes of tensor '%s'",
                     (unsigned long long)s->size, m->io[s->tensor].dev_bytes,
                     m->io[s->tensor].info.name), why = buf;
        if (why)
            return rt_err_set(e, SPY_E_BAD_BUNDLE, "SEGMENTS entry %u (offset %llu): %s", i,
                              (unsigned long long)(base + (uint64_t)i * sizeof *s), why),
                   e->status;
    }
    for (uint32_t i = 0; i < m->ntensors; i++)
        if (m->segs[m->tensors[i].seg].kind != SPY_SEGK_IO ||
            m->segs[m->tensors[i].seg].tensor != i)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "TENSORS entry %u '%s': segment %u does not point back to it", i,
                              m->io[i].info.name, m->tensors[i].seg),
                   e->status;
    return SPY_OK;
}

/* Checks every program's range and core id (kernel ownership comes later). */
static spy_status verify_programs(spy_model *m, RtErr *e) {
    uint64_t base = m->sec[SPY_SEC_PROGRAMS]->offset;
    for (uint32_t p = 0; p < m->nprograms; p++) {
        const SpyProgramDesc *d = &m->programs[p];
        if (d->ninsns == 0 || d->first_insn > m->ncode || d->ninsns > m->ncode - d->first_insn)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "PROGRAMS entry %u (offset %llu): instructions [%llu, +%u) "
                              "outside CODE (%llu instructions)",
                              p, (unsigned long long)(base + 16ull * p),
                              (unsigned long long)d->first_insn, d->ninsns,
                              (unsigned long long)m->ncode),
                   e->status;
        if (d->core >= m->target.cores)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "PROGRAMS entry %u (offset %llu): core %u past the last core %u",
                              p, (unsigned long long)(base + 16ull * p), d->core,
                              m->target.cores - 1),
                   e->status;
    }
    return SPY_OK;
}

/* Checks one program of kernel k: ends in BARRIER(k), no other barrier.
 * nbar[i] = barriers among code[0..i). */
static spy_status verify_program_barrier(spy_model *m, uint32_t k, uint32_t p,
                                         const uint32_t *nbar, RtErr *e) {
    const SpyProgramDesc *d = &m->programs[p];
    uint64_t last = d->first_insn + d->ninsns - 1;
    const SpyInsn *in = &m->code[last];
    const char *why = NULL;
    if (in->opcode != ISA_BARRIER)
        why = "does not end with a BARRIER";
    else if (in->bar.kernel != k)
        why = "ends with a BARRIER of another kernel";
    else if (nbar[last] != nbar[d->first_insn])
        why = "has a BARRIER before its end (unreachable code after it)";
    if (why)
        rt_err_set(e, SPY_E_BAD_BUNDLE, "kernel %u '%s' core %u (program %u): %s", k,
                   rt_str(m, m->kernels[k].name), d->core, p, why);
    return e->status;
}

/* Checks KERNELS: names, core counts, program ownership, core coverage, barriers. */
static spy_status verify_kernels(spy_model *m, RtErr *e) {
    uint32_t cores = m->target.cores;
    uint8_t *owned = calloc(m->nprograms + 1, 1);
    uint32_t *seen = calloc(cores, sizeof *seen);
    uint32_t *nbar = malloc((m->ncode + 1) * sizeof *nbar);
    if (!owned || !seen || !nbar) {
        rt_err_set(e, SPY_E_NOMEM, "out of memory");
        goto done;
    }
    nbar[0] = 0;
    for (uint64_t i = 0; i < m->ncode; i++)
        nbar[i + 1] = nbar[i] + (m->code[i].opcode == ISA_BARRIER);
    for (uint32_t k = 0; k < m->nkernels && !e->status; k++) {
        const SpyKernelDesc *kd = &m->kernels[k];
        uint64_t at = m->sec[SPY_SEC_KERNELS]->offset + 64ull * k;
        if (!str_ok(m, kd->name) || kd->ncores != cores ||
            kd->first_program > m->nprograms || kd->ncores > m->nprograms - kd->first_program) {
            rt_err_set(e, SPY_E_BAD_BUNDLE,
                       "KERNELS entry %u (offset %llu): bad name, core count %u (target has "
                       "%u) or programs [%u, +%u) outside PROGRAMS (%u)",
                       k, (unsigned long long)at, kd->ncores, cores, kd->first_program,
                       kd->ncores, m->nprograms);
            break;
        }
        for (uint32_t j = 0; j < cores && !e->status; j++) {
            uint32_t p = kd->first_program + j, c = m->programs[p].core;
            if (owned[p] || seen[c] == k + 1)
                rt_err_set(e, SPY_E_BAD_BUNDLE,
                           "kernel %u '%s': program %u is shared or core %u appears twice", k,
                           rt_str(m, kd->name), p, c);
            owned[p] = 1;
            seen[c] = k + 1;
            if (!e->status)
                verify_program_barrier(m, k, p, nbar, e);
        }
    }
done:
    free(owned);
    free(seen);
    free(nbar);
    return e->status;
}

/* Checks every instruction of CODE; names the owning kernel/core on failure. */
static spy_status verify_code(spy_model *m, RtErr *e) {
    char why[256];
    for (uint64_t i = 0; i < m->ncode; i++) {
        if (rt_verify_insn(m, &m->code[i], why, sizeof why))
            continue;
        uint64_t at = m->sec[SPY_SEC_CODE]->offset + i * sizeof(SpyInsn);
        for (uint32_t k = 0; k < m->nkernels; k++)
            for (uint32_t j = 0; j < m->kernels[k].ncores; j++) {
                const SpyProgramDesc *d = &m->programs[m->kernels[k].first_program + j];
                if (i >= d->first_insn && i - d->first_insn < d->ninsns)
                    return rt_err_set(e, SPY_E_BAD_BUNDLE,
                                      "kernel %u '%s' core %u instruction %llu (CODE %llu, "
                                      "offset %llu): %s",
                                      k, rt_str(m, m->kernels[k].name), d->core,
                                      (unsigned long long)(i - d->first_insn),
                                      (unsigned long long)i, (unsigned long long)at, why),
                           e->status;
            }
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "CODE instruction %llu (offset %llu): %s",
                          (unsigned long long)i, (unsigned long long)at, why),
               e->status;
    }
    return SPY_OK;
}

/* Checks SCHEDULE entries and the optional SELFTEST size. */
static spy_status verify_schedule(spy_model *m, RtErr *e) {
    for (uint32_t i = 0; i < m->nsched; i++)
        if (m->schedule[i] >= m->nkernels)
            return rt_err_set(e, SPY_E_BAD_BUNDLE,
                              "SCHEDULE entry %u (offset %llu): kernel %u out of range (%u)", i,
                              (unsigned long long)(m->sec[SPY_SEC_SCHEDULE]->offset + 4ull * i),
                              m->schedule[i], m->nkernels),
                   e->status;
    if (m->selftest) {
        uint64_t want = 0;
        for (uint32_t i = 0; i < m->ntensors; i++)
            want += m->io[i].info.nbytes;
        if (want != m->selftest_size)
            rt_err_set(e, SPY_E_BAD_BUNDLE,
                       "section SELFTEST: %llu bytes, the inputs and outputs need %llu",
                       (unsigned long long)m->selftest_size, (unsigned long long)want);
    }
    return e->status;
}

/* Verifies all tables of a parsed model; fills m->io and m->meta_text. */
spy_status rt_verify_tables(spy_model *m, RtErr *e) {
    if (m->ncode >= UINT32_MAX)
        return rt_err_set(e, SPY_E_BAD_BUNDLE, "section CODE has too many instructions"),
               e->status;
    if (verify_target(m, e) || verify_tensors(m, e) || verify_segments(m, e) ||
        rt_dyn_verify(m, e) || rt_sym_verify(m, e) ||
        verify_programs(m, e) || verify_kernels(m, e) || verify_code(m, e) ||
        rt_ring_verify(m, e) || verify_schedule(m, e) || rt_debug_verify(m, e))
        return e->status;
    m->meta_text = malloc(m->meta_size + 1);
    if (!m->meta_text)
        return rt_err_set(e, SPY_E_NOMEM, "out of memory"), e->status;
    memcpy(m->meta_text, m->meta, m->meta_size);
    m->meta_text[m->meta_size] = 0;
    return SPY_OK;
}
