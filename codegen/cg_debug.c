/* cg_debug.c: the entries of the bundle's DEBUG section (sbin.h SpyDebugDesc): for each
 * kernel whose output is stored in DRAM under a name the model itself gives that
 * tensor, where the output lies after the kernel has run (segment, byte offset of its
 * first element, strides: the kernel plan's view of the value) and its device dtype.
 *
 * Only names of the model are kept (the driver lists them before the passes run):
 * values the passes create get fresh names ("x_17") that mean nothing to a user and
 * differ between two compiles of one model, so two bundles match by name exactly the
 * tensors they both compute from the model. Graph outputs are left out (they are the
 * bundle's outputs), as are dtypes a reader cannot widen to float32 (sub-byte and
 * 8-bit float types).
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

/* Orders two name pointers by strcmp (bsearch over CgOptions.model_names). */
static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The entry of kernel ki's output v. */
static SpyDebugDesc entry(CgEmit *e, uint32_t ki, ValId v)
{
    IrGraph *g = e->g;
    const PlanValue *pv = &e->s->val[v];
    const IrType *t = ir_vtype(g, v);
    SpyDebugDesc d;
    memset(&d, 0, sizeof d);
    d.kernel = ki;
    d.dtype = (uint8_t)pass_dev_dtype(t->dtype);
    d.rank = (uint8_t)t->rank;
    uint32_t seg;
    int64_t off;
    cg_root(e, pv->view.root, &seg, &off);
    d.seg = seg;
    d.offset = (uint64_t)(off + pv->view.off * pass_dev_esize(t->dtype));
    for (int k = 0; k < t->rank; k++) {
        d.dims[k] = t->dims[k];
        d.strides[k] = pv->view.stride[k];
    }
    return d;
}

/* The DEBUG entries of the bundle being written (see the top), in kernel order, in
 * scratch memory: *out the descriptors without their name offsets, *names the names. */
uint32_t cg_debug_entries(CgEmit *e, const CgOptions *opt, SpyDebugDesc **out,
                          const char ***names)
{
    IrGraph *g = e->g;
    const Plan *p = g->plan;
    uint8_t *is_out = ir_scratch(g, (size_t)g->nvals + 1);
    for (uint32_t j = 0; j < g->noutputs; j++)
        is_out[g->outputs[j]] = 1;
    *out = ir_scratch(g, ((size_t)p->nkernels + 1) * sizeof **out);
    *names = ir_scratch(g, ((size_t)p->nkernels + 1) * sizeof **names);
    uint32_t n = 0;
    for (uint32_t ki = 0; ki < p->nkernels; ki++) {
        ValId v = p->kernels[ki].out;
        if (v == IR_NONE)
            continue;
        const IrValue *val = ir_val(g, v);
        const PlanValue *pv = &e->s->val[v];
        if (is_out[v] || val->kind != IR_VAL_ACT ||
            !spy_debug_dtype_ok(pass_dev_dtype(val->type.dtype)) ||
            e->s->val[pv->view.root].seg == UINT32_MAX ||
            e->s->val[pv->view.root].seg == ISA_SEG_CONST ||
            !bsearch(&val->name, opt->model_names, opt->nmodel_names, sizeof *opt->model_names,
                     cmp_name))
            continue;
        is_out[v] = 1;                     /* once, should two kernels write it */
        (*names)[n] = val->name;
        (*out)[n++] = entry(e, ki, v);
    }
    return n;
}
