/* dram_plan.c: where every tensor lives in device memory.
 *
 *   segment 0      constants read by some kernel, laid out once, 128-byte (stick) aligned, in
 *                  value order, in their device layout (I64 narrowed to I32)
 *   segment 1      the activation arena: each activation occupies its range from the
 *                  kernel that writes it to the last kernel that reads it (both
 *                  included, so a kernel never writes over what it reads); the ranges
 *                  (128-byte aligned) are placed offline, knowing every lifetime
 *                  (arena_fit.c), to keep the arena near the liveness bound
 *   segment 2 + i  graph input i, then graph output j at 2 + ninputs + j (a value
 *                  claimed by an output by pass_fuse lives there directly)
 * Views share their root's storage (PlanValue.dram_offset is set for them too, for
 * reports).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arena_fit.h"
#include "cpool.h"
#include "isa.h"
#include "pass.h"
#include "plan/plan.h"

/* Refuse int64/uint32/uint64 constants the device's int32 cannot hold. */
static bool check_i64_const(IrGraph *g, ValId v)
{
    const IrValue *val = ir_val(g, v);
    if (!pass_dev_narrows_int(val->type.dtype))
        return true;
    int64_t n = plan_numel(&val->type);
    for (int64_t i = 0; i < n; i++) {
        int64_t x;
        int32_t y;
        if (!pass_dev_elem(val->type.dtype, val->data, i, &y, &x)) {
            ir_diag_error(g->diag, "constant '%s' holds %" PRId64 " at element %" PRId64
                          ", outside the int32 range of the device (%s data is stored "
                          "as int32)", val->name, x, i, pass_dtype_long_name(val->type.dtype));
            return false;
        }
    }
    return true;
}

/* Lay out the constants that kernels read in segment 0: one after the other, or in the
 * pool pool shared with other size buckets (an identical constant placed before is
 * reused; segment 0 then ends where the pool does). */
static bool place_consts(IrGraph *g, Plan *s, const SpyTarget *t, PassConstPool *pool)
{
    uint8_t *used = ir_scratch(g, g->nvals + 1);
    for (uint32_t i = 0; i < s->nkernels; i++)
        for (uint32_t j = 0; j < s->kernels[i].nreads; j++)
            used[s->kernels[i].reads[j]] = 1;
    s->consts = ir_alloc(g, (g->nvals + 1) * sizeof *s->consts);
    s->nconsts = 0;
    uint64_t off = 0;
    bool ok = true;
    for (ValId v = 0; v < g->nvals; v++) {
        if (!used[v] || ir_val(g, v)->kind != IR_VAL_CONST)
            continue;
        ok &= check_i64_const(g, v);
        s->val[v].seg = ISA_SEG_CONST;
        uint64_t sz = (plan_storage_bytes(g, v, t) + IR_DRAM_ALIGN - 1) / IR_DRAM_ALIGN *
                      IR_DRAM_ALIGN;
        int64_t at = pool ? pass_cpool_place(pool, g, v, s->val[v].layout, sz) : (int64_t)off;
        if (at < 0)
            ir_oom(g);
        s->val[v].dram_offset = at;
        s->consts[s->nconsts++] = v;
        off += sz;
    }
    s->seg0_bytes = pool ? pass_cpool_end(pool) : off;
    return ok;
}

/* The liveness lower bound of the arena: the largest sum, over the kernels, of the
 * aligned bytes of the arena values live while the kernel runs (written at or before
 * it, last touched at or after it), which no placement can go below. */
static uint64_t live_bound(IrGraph *g, const Plan *s, const SpyTarget *t, const uint32_t *first,
                           const uint32_t *last)
{
    int64_t *delta = ir_scratch(g, ((size_t)s->nkernels + 1) * sizeof *delta);
    memset(delta, 0, ((size_t)s->nkernels + 1) * sizeof *delta);
    for (ValId v = 0; v < g->nvals; v++) {
        if (s->val[v].seg != ISA_SEG_ARENA || s->val[v].view.root != v || first[v] == UINT32_MAX)
            continue;
        uint64_t sz = plan_storage_bytes(g, v, t);
        sz = sz ? (sz + IR_DRAM_ALIGN - 1) / IR_DRAM_ALIGN * IR_DRAM_ALIGN : IR_DRAM_ALIGN;
        delta[first[v]] += (int64_t)sz;
        delta[last[v] + 1] -= (int64_t)sz;
    }
    int64_t live = 0, best = 0;
    for (uint32_t i = 0; i < s->nkernels; i++) {
        live += delta[i];
        best = live > best ? live : best;
    }
    return (uint64_t)best;
}

/* Place the activations in the arena by liveness: a root lives from its first writer
 * to its last reader or writer (an in-place concat has several writers); roots live at
 * one kernel never share a byte (a kernel's output and its last-read inputs meet at
 * that kernel, so a kernel never writes over what it reads). */
static void place_arena(IrGraph *g, Plan *s, const SpyTarget *t)
{
    uint32_t *last = ir_scratch(g, (g->nvals + 1) * sizeof *last);
    uint32_t *first = ir_scratch(g, (g->nvals + 1) * sizeof *first);
    for (ValId v = 0; v < g->nvals; v++)
        last[v] = first[v] = UINT32_MAX;
    for (uint32_t i = 0; i < s->nkernels; i++) {
        const IrKernel *k = &s->kernels[i];
        for (uint32_t j = 0; j < k->nreads; j++)
            last[k->reads[j]] = i;
        if (k->kind != IR_KK_COPY) {
            ValId r = s->val[k->out].view.root;
            last[r] = i;
            if (first[r] == UINT32_MAX)
                first[r] = i;
        }
    }
    /* one block per root first written by a kernel and not placed elsewhere (at most
     * one per kernel) */
    ArenaBlock *b = ir_scratch(g, ((size_t)s->nkernels + 1) * sizeof *b);
    ValId *who = ir_scratch(g, ((size_t)s->nkernels + 1) * sizeof *who);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->nkernels; i++) {
        const IrKernel *k = &s->kernels[i];
        ValId r = k->kind == IR_KK_COPY ? IR_NONE : s->val[k->out].view.root;
        if (r == IR_NONE || first[r] != i || s->val[r].seg != UINT32_MAX)
            continue;
        IR_ASSERT(!s->val[r].virt && ir_val(g, r)->kind == IR_VAL_ACT);
        uint64_t sz = plan_storage_bytes(g, r, t);
        sz = (sz + IR_DRAM_ALIGN - 1) / IR_DRAM_ALIGN * IR_DRAM_ALIGN;
        b[n] = (ArenaBlock){sz ? sz : IR_DRAM_ALIGN, first[r], last[r], 0};
        who[n++] = r;
    }
    s->arena_bytes = pass_arena_fit(b, n, ir_scratch(g, pass_arena_fit_work(n)));
    for (uint32_t i = 0; i < n; i++) {
        s->val[who[i]].seg = ISA_SEG_ARENA;
        s->val[who[i]].dram_offset = (int64_t)b[i].off;
    }
    s->live_bound = live_bound(g, s, t, first, last);
}

bool pass_dram_plan(IrGraph *g, const PassOptions *opt)
{
    Plan *s = g->plan;
    IR_ASSERT(s && opt->target);
    for (ValId v = 0; v < g->nvals; v++) {
        s->val[v].seg = UINT32_MAX;
        s->val[v].dram_offset = -1;
    }
    for (uint32_t i = 0; i < g->ninputs; i++) {
        s->val[g->inputs[i]].seg = ISA_SEG_IO0 + i;
        s->val[g->inputs[i]].dram_offset = 0;
    }
    for (ValId v = 0; v < g->nvals; v++)
        if (s->val[v].claim >= 0) {
            s->val[v].seg = ISA_SEG_IO0 + g->ninputs + (uint32_t)s->val[v].claim;
            s->val[v].dram_offset = 0;
        }
    if (!place_consts(g, s, opt->target, opt->cpool))
        return false;
    place_arena(g, s, opt->target);
    uint64_t io = 0, limit = (uint64_t)opt->target->dram_gib << 30;
    for (uint32_t i = 0; i < g->ninputs + g->noutputs; i++) {
        ValId v = i < g->ninputs ? g->inputs[i] : g->outputs[i - g->ninputs];
        const IrType *t = ir_vtype(g, v);
        io += (uint64_t)plan_numel(t) * (uint64_t)pass_dev_esize(t->dtype);
    }
    if (s->seg0_bytes + s->arena_bytes + io > limit) {
        ir_diag_error(g->diag, "the model needs %llu bytes of device memory (constants %llu, "
                      "activations %llu, inputs and outputs %llu), more than the %u GiB the "
                      "device has (unsupported size)",
                      (unsigned long long)(s->seg0_bytes + s->arena_bytes + io),
                      (unsigned long long)s->seg0_bytes, (unsigned long long)s->arena_bytes,
                      (unsigned long long)io, opt->target->dram_gib);
        return false;
    }
    for (ValId v = 0; v < g->nvals; v++) {
        PlanValue *pv = &s->val[v];
        ValId r = pv->view.root;
        if (r != v && s->val[r].seg != UINT32_MAX) {
            pv->seg = s->val[r].seg;
            pv->dram_offset = s->val[r].dram_offset +
                              pv->view.off * pass_dev_esize(ir_vtype(g, v)->dtype);
        }
    }
    return true;
}
