/* rt_api.c: the small public accessors of spyrt.h: status strings, version, model
 * tensors and kernels, memory needs, modelled profile, META and SELFTEST data.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt_exec.h"
#include "rt_model.h"

#define SPYRT_VERSION "0.1.0"

/* Human-readable name of a status code. */
const char *spy_status_str(spy_status s) {
    switch (s) {
    case SPY_OK: return "ok";
    case SPY_E_INVALID_ARG: return "invalid argument";
    case SPY_E_BAD_BUNDLE: return "malformed bundle";
    case SPY_E_VERSION: return "incompatible bundle version";
    case SPY_E_TARGET: return "unsupported target parameters";
    case SPY_E_IO: return "I/O error";
    case SPY_E_NOMEM: return "out of memory";
    case SPY_E_RUNTIME: return "run-time error";
    default: return "unknown status";
    }
}

/* Version of the runtime and the bundle format it reads. */
const char *spy_version(void) {
    return "spyrt " SPYRT_VERSION " (bundle format v1.2)";
}

/* Frees a model (NULL is ignored). Sessions of it must be freed first. */
void spy_model_free(spy_model *m) {
    if (!m)
        return;
    if (m->ktime && m->nkernels)
        free(m->ktime[0].core_us);
    free(m->ktime);
    free(m->sched_count);
    free(m->share_rank);
    free(m->active);
    free(m->active_first);
    free(m->prep);
    free(m->kwr);
    free(m->kwr_first);
    free(m->odep);
    free(m->odep_first);
    rt_stitch_free(m);
    free(m->io);
    free(m->meta_text);
    for (uint32_t v = 0; v < m->nvariants; v++)
        spy_model_free(m->variants[v]);
    free(m->variants);
    rt_model_release(m);
    free(m);
}

int spy_model_num_inputs(const spy_model *m) {
    return m ? (int)m->nvis_in : 0;        /* the dims input (SPY_TF_DIMS) is internal */
}

int spy_model_num_outputs(const spy_model *m) {
    return m ? (int)m->nvisible : 0;       /* hidden outputs (counts) are internal */
}

int spy_model_num_kernels(const spy_model *m) {
    return m ? (int)m->nkernels : 0;
}

/* Describes graph input i. */
spy_status spy_model_input_info(const spy_model *m, int i, spy_tensor_info *info) {
    if (!m || !info || i < 0 || (uint32_t)i >= m->nvis_in)
        return SPY_E_INVALID_ARG;
    *info = m->io[i].info;
    return SPY_OK;
}

/* Describes graph output i. */
spy_status spy_model_output_info(const spy_model *m, int i, spy_tensor_info *info) {
    if (!m || !info || i < 0 || (uint32_t)i >= m->nvisible)
        return SPY_E_INVALID_ARG;
    *info = m->io[m->ninputs + (uint32_t)i].info;
    return SPY_OK;
}

/* Default number of host threads of a session: one per online CPU, at most cores. */
int rt_default_threads(const spy_model *m) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > (long)m->target.cores)
        n = (long)m->target.cores;
    return (int)n;
}

/* Memory of a session with the default thread count; with size buckets, also that of
 * the session each bucket gets at its first run. */
size_t spy_model_session_bytes(const spy_model *m) {
    if (!m)
        return 0;
    size_t n = (size_t)m->segs[1].size + m->staging_bytes +
               (size_t)rt_default_threads(m) * (m->target.lx_budget_bytes + RT_PACK_BYTES) +
               (size_t)m->nsegs * sizeof(void *);
    for (uint32_t v = 0; v < m->nvariants; v++)
        n += spy_model_session_bytes(m->variants[v]);
    return n;
}

/* Total modelled device time of one inference. */
double spy_model_device_us(const spy_model *m) {
    return m ? m->device_us : 0;
}

/* Modelled figures of kernel i per inference. */
spy_status spy_model_kernel_profile(const spy_model *m, int i, spy_kernel_profile *p) {
    if (!m || !p || i < 0 || (uint32_t)i >= m->nkernels)
        return SPY_E_INVALID_ARG;
    const RtKernelTime *kt = &m->ktime[i];
    double n = m->sched_count[i];
    memset(p, 0, sizeof *p);
    p->name = rt_str(m, m->kernels[i].name);
    p->device_us = kt->device_us * n;
    p->roofline_us = kt->roofline_us * n;
    p->flops = kt->flops * m->sched_count[i];
    p->dram_bytes = kt->dram_bytes * m->sched_count[i];
    p->min_dram_bytes = kt->min_dram_bytes * m->sched_count[i];
    p->limiter = rt_timing_limiter_name(kt->limiter);
    return SPY_OK;
}

/* Per-core modelled times of kernel i; returns the core count or -1. */
int spy_model_kernel_core_us(const spy_model *m, int i, double *core_us, int n) {
    if (!m || i < 0 || (uint32_t)i >= m->nkernels || n < 0 || (n > 0 && !core_us))
        return -1;
    int cores = (int)m->target.cores;
    for (int c = 0; c < n && c < cores; c++)
        core_us[c] = m->ktime[i].core_us[c];
    return cores;
}

/* META text of the bundle. */
const char *spy_model_meta(const spy_model *m) {
    return m && m->meta_text ? m->meta_text : "";
}

/* Byte offset in SELFTEST of tensor t (inputs then outputs, host dtypes). */
static const void *selftest_at(const spy_model *m, uint32_t t) {
    if (!m->selftest)
        return NULL;
    size_t off = 0;
    for (uint32_t i = 0; i < t; i++)
        off += m->io[i].info.nbytes;
    return m->selftest + off;
}

const void *spy_model_selftest_input(const spy_model *m, int i) {
    if (!m || i < 0 || (uint32_t)i >= m->nvis_in)
        return NULL;
    return selftest_at(m, (uint32_t)i);
}

const void *spy_model_selftest_output(const spy_model *m, int i) {
    if (!m || i < 0 || (uint32_t)i >= m->nvisible)
        return NULL;
    return selftest_at(m, m->ninputs + (uint32_t)i);
}

/* Kernel indices of the schedule, in execution order. */
int spy_model_schedule(const spy_model *m, int *kernels, int n) {
    if (!m || n < 0 || (n > 0 && !kernels))
        return -1;
    for (uint32_t i = 0; i < m->nsched && i < (uint32_t)n; i++)
        kernels[i] = (int)m->schedule[i];
    return (int)m->nsched;
}

/* Data-dependent axis of output i (its extent is known after a run), -1 if static. */
int spy_model_output_dynamic_axis(const spy_model *m, int i) {
    if (!m || i < 0 || (uint32_t)i >= m->nvisible)
        return -1;
    return m->io[m->ninputs + (uint32_t)i].dyn_axis;
}
