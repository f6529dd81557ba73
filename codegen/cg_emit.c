/* cg_emit.c: the code generator's driver. For every kernel (in schedule order) and
 * every core it emits the core's work items (its contiguous range of the kernel's
 * grid, see pass_divide) through the kind's lowering, then BARRIER(kernel); cores
 * without items get a program of just the barrier. The instruction streams and the
 * plan then go to the bundle writer (cg_bundle.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cg_internal.h"

void cg_push(CgEmit *e, const SpyInsn *in)
{
    if (e->n == e->cap) {
        e->cap = e->cap ? 2 * e->cap : 4096;
        SpyInsn *nc = realloc(e->code, e->cap * sizeof *nc);
        if (!nc) {                         /* the only heap block of codegen: free it */
            free(e->code);
            e->code = NULL;
            ir_oom(e->g);
        }
        e->code = nc;
    }
    e->code[e->n++] = *in;
    CgSpan w;
    if (cg_insn_lx_write(in, &w))
        cg_cache_invalidate(e, &w);
}

void cg_push_fill(CgEmit *e, int dt, uint32_t dst, uint32_t n, uint32_t bits)
{
    SpyInsn in;
    memset(&in, 0, sizeof in);
    in.fill.opcode = ISA_VFILL;
    in.fill.dtype = (uint8_t)dt;
    in.fill.dst = dst;
    in.fill.n = n;
    in.fill.value = bits;
    cg_push(e, &in);
}

void cg_root(CgEmit *e, ValId r, uint32_t *seg, int64_t *off)
{
    *seg = e->s->val[r].seg;
    *off = e->s->val[r].dram_offset;
    IR_ASSERT(*seg != UINT32_MAX && *off >= 0);
}

void cg_access_at(CgEmit *e, const IrAccess *a, const int64_t *start, int nd, unsigned esize,
                  uint32_t *seg, int64_t *off)
{
    int64_t el = a->base;
    for (int d = 0; d < nd; d++)
        el += a->is[d] * start[d];
    cg_root(e, a->root, seg, off);
    *off += el * (int64_t)esize;
}

/* Programs of kernel ki for every core; progs gets one descriptor per core. */
static void emit_kernel(CgEmit *e, uint32_t ki, SpyProgramDesc *progs)
{
    const IrKernel *k = &e->g->plan->kernels[ki];
    uint32_t cores = e->t->cores;
    IR_ASSERT(k->core_first && k->ncores == cores);
    for (uint32_t c = 0; c < cores; c++) {
        uint64_t first = e->n;
        e->core = c;
        e->kernel = k;
        cg_cache_reset(e);
        if (k->core_first[c + 1] > k->core_first[c]) {
            cg_tp_prelude(e, &k->tp[0]);
            cg_tp_prelude(e, &k->tp[1]);
        }
        for (uint64_t it = k->core_first[c]; it < k->core_first[c + 1]; it++) {
            int64_t start[IR_ITER_MAX], len[IR_ITER_MAX];
            plan_kernel_item(k, it, start, len);
            switch (k->kind) {
            case IR_KK_ELEM: cg_tp_run(e, &k->tp[0], start, len); break;
            case IR_KK_CONTRACT: cg_contract_item(e, k, start, len); break;
            case IR_KK_REDUCE: cg_reduce_item(e, k, start, len); break;
            default: cg_move_item(e, k, start, len); break;
            }
        }
        SpyInsn bar;
        memset(&bar, 0, sizeof bar);
        bar.bar.opcode = ISA_BARRIER;
        bar.bar.kernel = ki;
        cg_push(e, &bar);
        progs[(uint64_t)ki * cores + c] =
            (SpyProgramDesc){.first_insn = first, .ninsns = (uint32_t)(e->n - first), .core = c};
    }
}

/* Lower every kernel and write the bundle to o. */
static bool emit_bundle(IrGraph *g, const CgOptions *opt, CgOut *o)
{
    IR_ASSERT(g->plan && opt && opt->target);
    CgEmit e;
    memset(&e, 0, sizeof e);
    e.g = g;
    e.t = opt->target;
    e.s = g->plan;
    for (uint32_t i = 0; i < g->ninputs; i++)
        if (plan_edge_f32(g, g->inputs[i])) {
            if (!e.in_f32)
                e.in_f32 = ir_scratch(g, g->ninputs);
            e.in_f32[i] = 1;
        }
    uint64_t np = (uint64_t)g->plan->nkernels * opt->target->cores;
    SpyProgramDesc *progs = ir_scratch(g, (np + 1) * sizeof *progs);
    for (uint32_t i = 0; i < g->plan->nkernels; i++)
        emit_kernel(&e, i, progs);
    bool ok = cg_write_bundle(&e, opt, progs, o);
    free(e.code);
    ir_scratch_reset(g);                   /* progs: codegen runs after the pipeline */
    return ok;
}

bool cg_emit_bundle(IrGraph *g, const CgOptions *opt, uint8_t **out, size_t *outlen)
{
    IR_ASSERT(out && outlen);
    CgOut o = {.fd = -1};
    bool ok = emit_bundle(g, opt, &o);
    *out = o.mem;
    *outlen = o.len;
    return ok;
}

bool cg_emit_bundle_fd(IrGraph *g, const CgOptions *opt, int fd, bool direct, size_t *outlen,
                       int *err)
{
    IR_ASSERT(fd >= 0 && outlen && err);
    CgOut o = {.fd = fd, .direct = direct};
    bool ok = emit_bundle(g, opt, &o);
    *outlen = o.len;
    *err = o.err;
    return ok;
}
