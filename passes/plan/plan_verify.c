/* plan_verify.c: invariants of the kernel plan, checked after every back-end pass
 * (with --verify, always in debug builds), each stage checking what its pass filled:
 *
 *   fuse       every live node is in exactly one kernel (as its anchor, prologue or
 *              epilogue member; PlanNode.kernel agrees) or is virtual (no kernel)
 *   layout     every view's root owns its storage; only constants are STICKED
 *   divide     every kernel's items are split over the target's cores in contiguous
 *              ranges that cover each item once (core_first: 0, monotone, nitems)
 *   tile       LX buffers (anchor buffers, tile-program buffers) end within lx_bytes,
 *              which is within the target's budget; buffers live at the same time do
 *              not overlap (a step's result may take over an operand dying at it)
 *   dram_plan  every stored root has a segment; constants and the activations live
 *              at the same time (kernel-index liveness) have disjoint DRAM ranges
 *              inside their segment; every strided DRAM access of every kernel, over
 *              the box of each core's items, stays inside its root's storage and
 *              spans at most the core's address window (isa.md, "DRAM windows": the
 *              compiler's rule, per core, kernel and tensor)
 *
 * Problems are reported like ir_verify's: "internal error after pass X: ..." (they
 * are our bugs), at most 20 per verification.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isa.h"
#include "plan.h"

enum { ST_FUSE, ST_LAYOUT, ST_DIVIDE, ST_TILE, ST_DRAM };

typedef struct {
    IrGraph *g;
    Plan *p;
    const SpyTarget *t;
    const char *pass;
    int nerr;
} PVfy;

/* Report one problem (the first 20 of a verification). */
__attribute__((format(printf, 2, 3))) static void fail(PVfy *v, const char *fmt, ...)
{
    if (v->nerr++ >= 20)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ir_diag_error(v->g->diag, "internal error after pass %s: plan: %s", v->pass, msg);
}

/* ---- fuse, layout ---- */

/* Count one membership of node n in kernel ki. */
static void member(PVfy *v, uint32_t *seen, NodeId n, uint32_t ki)
{
    if (n >= v->g->nnodes) {
        fail(v, "kernel %u lists node %u of %u", ki, n, v->g->nnodes);
        return;
    }
    if (seen[n]++ == 0 && v->p->node[n].kernel != ki)
        fail(v, "node %u is listed by kernel %u but marked as kernel %u", n, ki,
             v->p->node[n].kernel);
}

/* Every live node in exactly one kernel, or virtual and in none. */
static void check_members(PVfy *v)
{
    IrGraph *g = v->g;
    Plan *p = v->p;
    uint32_t *seen = ir_scratch(g, (g->nnodes + 1) * sizeof *seen);
    for (uint32_t i = 0; i < p->nkernels; i++) {
        const IrKernel *k = &p->kernels[i];
        if (k->out >= g->nvals)
            fail(v, "kernel %u writes no value", i);
        if (k->anchor != IR_NONE)
            member(v, seen, k->anchor, i);
        for (uint32_t j = 0; j < k->npro; j++)
            member(v, seen, k->pro[j], i);
        for (uint32_t j = 0; j < k->nepi; j++)
            member(v, seen, k->epi[j], i);
    }
    for (NodeId n = 0; n < g->nnodes; n++) {
        bool live = !g->nodes[n].dead && !p->node[n].virt;
        if (live && seen[n] != 1)
            fail(v, "node %u (%s) is in %u kernels, not one", n,
                 ir_op_info[g->nodes[n].op].name, seen[n]);
        else if (!live && (seen[n] || p->node[n].kernel != IR_NONE))
            fail(v, "%s node %u is in a kernel", g->nodes[n].dead ? "dead" : "virtual", n);
    }
}

/* Views: each root owns its storage; STICKED only for constants. */
static void check_views(PVfy *v)
{
    IrGraph *g = v->g;
    Plan *p = v->p;
    for (ValId x = 0; x < g->nvals; x++) {
        ValId r = p->val[x].view.root;
        if (r >= g->nvals || p->val[r].virt || p->val[r].view.root != r)
            fail(v, "value '%s' is a view of %u, which does not own its storage",
                 ir_val(g, x)->name, r);
        else if ((r == x) == p->val[x].virt)
            fail(v, "value '%s' is %svirtual but its view root is %s", ir_val(g, x)->name,
                 p->val[x].virt ? "" : "not ", r == x ? "itself" : "another value");
        if (p->val[x].layout == IR_LAYOUT_STICKED && ir_val(g, x)->kind != IR_VAL_CONST)
            fail(v, "activation '%s' is STICKED", ir_val(g, x)->name);
    }
}

/* ---- divide ---- */

/* The grid is well formed and core_first covers its items once, in core order. */
static void check_cores(PVfy *v, uint32_t ki, const IrKernel *k)
{
    const IrGrid *gr = &k->grid;
    if (gr->rank < 0 || gr->rank > IR_ITER_MAX) {
        fail(v, "kernel %u: grid rank %d", ki, gr->rank);
        return;
    }
    for (int d = 0; d < gr->rank; d++)
        if (gr->chunk[d] < 1 || gr->ext[d] < 0) {
            fail(v, "kernel %u: grid dim %d has extent %lld, chunk %lld", ki, d,
                 (long long)gr->ext[d], (long long)gr->chunk[d]);
            return;
        }
    if (!k->core_first || k->ncores != v->t->cores) {
        fail(v, "kernel %u: items split over %u cores, the target has %u", ki,
             k->core_first ? k->ncores : 0, v->t->cores);
        return;
    }
    if (k->nitems != (uint64_t)plan_grid_items(gr))
        fail(v, "kernel %u: %llu items, its grid has %lld", ki, (unsigned long long)k->nitems,
             (long long)plan_grid_items(gr));
    if (k->core_first[0] != 0 || k->core_first[k->ncores] != k->nitems)
        fail(v, "kernel %u: cores run items [%llu, %llu), not [0, %llu)", ki,
             (unsigned long long)k->core_first[0],
             (unsigned long long)k->core_first[k->ncores], (unsigned long long)k->nitems);
    for (uint32_t c = 0; c < k->ncores; c++)
        if (k->core_first[c + 1] < k->core_first[c])
            fail(v, "kernel %u: core %u starts at item %llu after core %u ends at %llu", ki,
                 c + 1, (unsigned long long)k->core_first[c + 1], c,
                 (unsigned long long)k->core_first[c]);
}

/* ---- tile ---- */

/* A range of LX bytes [lo, hi): an anchor buffer or the range of tile program prog
 * (live for the whole kernel), or the buffer of a value of program prog, live from
 * step def to step last. */
typedef struct {
    uint64_t lo, hi;
    enum { LX_ANCHOR, LX_PROG, LX_VALUE } kind;
    int prog;
    int32_t def, last;
    const char *what;
} LxBuf;

/* Step of tp computing each of its values (-1: there from the program's start), one
 * pass over the steps through the program's index. */
static int32_t *def_steps(IrGraph *g, const IrTileProg *tp)
{
    int32_t *def = ir_scratch(g, ((size_t)tp->nvals + 1) * sizeof *def);
    for (uint32_t i = 0; i < tp->nvals; i++)
        def[i] = -1;
    for (uint32_t s = 0; s < tp->nsteps; s++) {
        int i = plan_tp_find(tp, ir_node(g, tp->steps[s])->out[0]);
        if (i >= 0 && tp->vals[i].src == IR_TV_NODE && def[i] < 0)
            def[i] = (int32_t)s;
    }
    return def;
}

/* Whether LX ranges a and b overlap while both are live. A program's values lie in its
 * range; two values of one program may share bytes when their lives do not overlap
 * (a step's result takes over the buffer of an operand dying at that step). */
static bool lx_conflict(const LxBuf *a, const LxBuf *b)
{
    if (a->lo >= b->hi || b->lo >= a->hi)
        return false;
    if (a->kind == LX_ANCHOR || b->kind == LX_ANCHOR || a->prog != b->prog)
        return true;
    if (a->kind == LX_PROG || b->kind == LX_PROG)
        return a->kind == b->kind;
    return a->def < b->last && b->def < a->last;
}

/* Collect the LX ranges of kernel k into bufs (returns how many): first the anchor
 * buffers and program ranges (*nfixed of them), then the values of program 0, then
 * those of program 1. A value's buffer lies in its program's range, except a seed and
 * what takes over its buffer: those lie in the anchor buffer holding the seed (not
 * collected again). */
static uint32_t lx_buffers(PVfy *v, uint32_t ki, const IrKernel *k, LxBuf *bufs,
                           uint32_t *nfixed)
{
    uint32_t n = 0;
    for (int b = 0; b < IR_KBUF_MAX; b++)
        if (k->buf_bytes[b])
            bufs[n++] = (LxBuf){k->buf[b], (uint64_t)k->buf[b] + k->buf_bytes[b], LX_ANCHOR,
                                -1, -1, 0, "anchor"};
    uint32_t nanchor = n;
    for (int t = 0; t < 2; t++)
        if (k->tp[t].lx_hi > k->tp[t].lx_lo)
            bufs[n++] = (LxBuf){k->tp[t].lx_lo, k->tp[t].lx_hi, LX_PROG, t, -1, 0, "program"};
    *nfixed = n;
    for (int t = 0; t < 2; t++) {
        const IrTileProg *tp = &k->tp[t];
        int32_t *def = def_steps(v->g, tp);
        for (uint32_t i = 0; i < tp->nvals; i++) {
            const IrTileVal *tv = &tp->vals[i];
            if (tv->lx == UINT32_MAX)
                continue;                    /* an immediate */
            LxBuf b = {tv->lx, (uint64_t)tv->lx + tv->bytes, LX_VALUE, t, def[i], tv->last,
                       ir_val(v->g, tv->v)->name};
            b.last = b.last < b.def ? b.def : b.last;
            bool in_anchor = false;
            for (uint32_t a = 0; a < nanchor; a++)
                in_anchor |= b.lo >= bufs[a].lo && b.hi <= bufs[a].hi;
            if (b.lo >= tp->lx_lo && b.hi <= tp->lx_hi)
                bufs[n++] = b;
            else if (!in_anchor)
                fail(v, "kernel %u: LX buffer of '%s' [0x%llx, 0x%llx) lies outside its "
                     "program [0x%x, 0x%x)", ki, b.what, (unsigned long long)b.lo,
                     (unsigned long long)b.hi, tp->lx_lo, tp->lx_hi);
        }
    }
    return n;
}

/* Report LX ranges a and b of kernel ki overlapping while both are live. */
static void lx_report(PVfy *v, uint32_t ki, const LxBuf *a, const LxBuf *b)
{
    fail(v, "kernel %u: LX ranges of %s [0x%llx, 0x%llx) and %s [0x%llx, 0x%llx) overlap "
         "while both are live", ki, a->what, (unsigned long long)a->lo,
         (unsigned long long)a->hi, b->what, (unsigned long long)b->lo,
         (unsigned long long)b->hi);
}

/* Order of value buffers by program, then first live step, then position. */
static int cmp_life(const void *x, const void *y)
{
    const LxBuf *a = *(const LxBuf *const *)x, *b = *(const LxBuf *const *)y;
    if (a->prog != b->prog)
        return a->prog - b->prog;
    if (a->def != b->def)
        return a->def < b->def ? -1 : 1;
    return (a > b) - (a < b);
}

/* Value buffers vals[0..n) of one kernel that share bytes while both are live. Values
 * of different programs lie in their programs' ranges, whose overlap is a conflict of
 * its own; within a program a sweep over steps keeps the values live at the current
 * one, so the work grows with values times the largest live set, not values squared. */
static void lx_value_conflicts(PVfy *v, uint32_t ki, LxBuf *vals, uint32_t n)
{
    const LxBuf **ord = ir_scratch(v->g, ((size_t)n + 1) * sizeof *ord);
    const LxBuf **live = ir_scratch(v->g, ((size_t)n + 1) * sizeof *live);
    for (uint32_t i = 0; i < n; i++)
        ord[i] = &vals[i];
    qsort(ord, n, sizeof *ord, cmp_life);
    uint32_t nlive = 0;
    for (uint32_t i = 0; i < n; i++) {
        const LxBuf *b = ord[i];
        if (i > 0 && b->prog != ord[i - 1]->prog)
            nlive = 0;
        for (uint32_t j = 0; j < nlive;) {
            if (live[j]->last <= b->def) {  /* dead before b is made: drop it */
                live[j] = live[--nlive];
                continue;
            }
            if (lx_conflict(live[j], b))
                lx_report(v, ki, live[j] < b ? live[j] : b, live[j] < b ? b : live[j]);
            j++;
        }
        live[nlive++] = b;
    }
}

/* LX of kernel k: within lx_bytes and the budget, no two live buffers overlapping. */
static void check_lx(PVfy *v, uint32_t ki, const IrKernel *k)
{
    if (k->lx_bytes > v->t->lx_budget_bytes)
        fail(v, "kernel %u: %u bytes of LX, more than the budget of %u", ki, k->lx_bytes,
             v->t->lx_budget_bytes);
    LxBuf *bufs = ir_scratch(v->g, (IR_KBUF_MAX + 2 + k->tp[0].nvals + k->tp[1].nvals) *
                                       sizeof *bufs);
    uint32_t nfixed, n = lx_buffers(v, ki, k, bufs, &nfixed);
    for (uint32_t i = 0; i < n; i++) {
        if (bufs[i].hi > k->lx_bytes)
            fail(v, "kernel %u: LX range of %s ends at 0x%llx, after its %u bytes", ki,
                 bufs[i].what, (unsigned long long)bufs[i].hi, k->lx_bytes);
        for (uint32_t j = i + 1; i < nfixed && j < n; j++)
            if (lx_conflict(&bufs[i], &bufs[j]))
                lx_report(v, ki, &bufs[i], &bufs[j]);
    }
    lx_value_conflicts(v, ki, bufs + nfixed, n - nfixed);
}

/* ---- dram_plan ---- */

/* A stored root: its segment range and the kernels that touch it. */
typedef struct {
    ValId v;
    uint64_t off, end;
    uint32_t first, last;                  /* kernel indices (UINT32_MAX: none) */
} DramRange;

/* Order of ranges by offset, then value. */
static int cmp_range(const void *a, const void *b)
{
    const DramRange *x = a, *y = b;
    if (x->off != y->off)
        return x->off < y->off ? -1 : 1;
    return (x->v > y->v) - (x->v < y->v);
}

/* Kernels touching root r, as [first, last] in rng (a kernel writes its output's root
 * and reads its reads). */
static void touch(DramRange *rng, uint32_t *slot, ValId r, uint32_t ki)
{
    if (r == IR_NONE || slot[r] == UINT32_MAX)
        return;
    DramRange *x = &rng[slot[r]];
    x->first = x->first == UINT32_MAX || ki < x->first ? ki : x->first;
    x->last = x->last == UINT32_MAX || ki > x->last ? ki : x->last;
}

/* Whether constants a and b may share one DRAM range: the same type, device layout and
 * bytes (the constant pool of size buckets, passes/cpool.c, stores identical constants
 * once). */
static bool same_constant(const PVfy *v, const DramRange *a, const DramRange *b)
{
    const IrValue *x = ir_val(v->g, a->v), *y = ir_val(v->g, b->v);
    if (a->off != b->off || a->end != b->end || x->type.dtype != y->type.dtype ||
        x->type.rank != y->type.rank || v->p->val[a->v].layout != v->p->val[b->v].layout ||
        memcmp(x->type.dims, y->type.dims, (size_t)x->type.rank * sizeof x->type.dims[0]))
        return false;
    size_t n = ir_type_bytes(&x->type);
    return !n || (x->data && y->data && !memcmp(x->data, y->data, n));
}

/* The n ranges of one segment of size bytes, sorted by offset here: each inside the
 * segment; no two overlapping when their kernel intervals meet (always: constants,
 * live for the whole run, unless they are identical and share their bytes). */
static void check_segment(PVfy *v, DramRange *rng, uint32_t n, uint64_t size, bool always)
{
    qsort(rng, n, sizeof *rng, cmp_range);
    for (uint32_t i = 0; i < n; i++) {
        if (rng[i].end > size)
            fail(v, "'%s' at [%llu, %llu) lies outside its %llu-byte segment",
                 ir_val(v->g, rng[i].v)->name, (unsigned long long)rng[i].off,
                 (unsigned long long)rng[i].end, (unsigned long long)size);
        for (uint32_t j = i + 1; j < n && rng[j].off < rng[i].end; j++) {
            bool meet = always || (rng[i].first != UINT32_MAX && rng[j].first != UINT32_MAX &&
                                   rng[i].first <= rng[j].last && rng[j].first <= rng[i].last);
            if (meet && rng[j].end > rng[j].off &&
                !(always && same_constant(v, &rng[i], &rng[j])))
                fail(v, "'%s' [%llu, %llu) and '%s' [%llu, %llu) overlap in DRAM while both "
                     "are live", ir_val(v->g, rng[i].v)->name, (unsigned long long)rng[i].off,
                     (unsigned long long)rng[i].end, ir_val(v->g, rng[j].v)->name,
                     (unsigned long long)rng[j].off, (unsigned long long)rng[j].end);
        }
    }
}

/* Every stored root has a place; constants and live activations do not overlap; an
 * I/O segment holds one root. */
static void check_dram(PVfy *v)
{
    IrGraph *g = v->g;
    Plan *p = v->p;
    DramRange *cst = ir_scratch(g, (g->nvals + 1) * sizeof *cst);
    DramRange *act = ir_scratch(g, (g->nvals + 1) * sizeof *act);
    uint32_t *slot = ir_scratch(g, (g->nvals + 1) * sizeof *slot);
    ValId *io = ir_scratch(g, (g->ninputs + g->noutputs + 1) * sizeof *io);
    uint32_t ncst = 0, nact = 0;
    for (uint32_t i = 0; i < g->ninputs + g->noutputs; i++)
        io[i] = IR_NONE;
    for (ValId x = 0; x < g->nvals; x++) {
        const PlanValue *pv = &p->val[x];
        slot[x] = UINT32_MAX;
        if (pv->view.root != x || pv->seg == UINT32_MAX)
            continue;
        if (pv->dram_offset < 0) {
            fail(v, "'%s' has segment %u but no offset", ir_val(g, x)->name, pv->seg);
            continue;
        }
        DramRange r = {x, (uint64_t)pv->dram_offset,
                       (uint64_t)pv->dram_offset + plan_storage_bytes(g, x, v->t), UINT32_MAX,
                       UINT32_MAX};
        if (pv->seg == ISA_SEG_CONST) {
            cst[ncst++] = r;
        } else if (pv->seg == ISA_SEG_ARENA) {
            slot[x] = nact;
            act[nact++] = r;
        } else if (pv->seg - ISA_SEG_IO0 >= g->ninputs + g->noutputs ||
                   io[pv->seg - ISA_SEG_IO0] != IR_NONE) {
            fail(v, "'%s' is in segment %u, which is not its own I/O segment",
                 ir_val(g, x)->name, pv->seg);
        } else {
            io[pv->seg - ISA_SEG_IO0] = x;
        }
    }
    for (uint32_t i = 0; i < p->nkernels; i++) {
        const IrKernel *k = &p->kernels[i];
        if (k->kind != IR_KK_COPY)
            touch(act, slot, p->val[k->out].view.root, i);
        for (uint32_t j = 0; j < k->nreads; j++) {
            touch(act, slot, k->reads[j], i);
            if (p->val[k->reads[j]].seg == UINT32_MAX)
                fail(v, "kernel %u reads '%s', which has no DRAM place", i,
                     ir_val(g, k->reads[j])->name);
        }
    }
    check_segment(v, cst, ncst, p->seg0_bytes, true);
    check_segment(v, act, nact, p->arena_bytes, false);
}

/* Access a over the box [start, start + len) of its space: inside the storage of its
 * root and spanning at most the core's window. */
static void check_access(PVfy *v, uint32_t ki, uint32_t core, const IrAccess *a, int nd,
                         const int64_t *start, const int64_t *len)
{
    IrGraph *g = v->g;
    if (a->root == IR_NONE)
        return;
    int64_t lo = a->base, hi = a->base;
    for (int d = 0; d < nd; d++) {
        if (len[d] == 0)
            return;                        /* no elements */
        int64_t x = a->is[d] * start[d], y = a->is[d] * (start[d] + len[d] - 1);
        lo += x < y ? x : y;
        hi += x < y ? y : x;
    }
    int64_t es = pass_dev_esize(ir_vtype(g, a->root)->dtype);
    uint64_t bytes = plan_storage_bytes(g, a->root, v->t);
    uint64_t window = (uint64_t)v->t->core_window_mib << 20;
    if (lo < 0 || (uint64_t)(hi + 1) * (uint64_t)es > bytes)
        fail(v, "kernel %u, core %u: access of '%s' reaches bytes [%lld, %lld), outside its "
             "%llu bytes", ki, core, ir_val(g, a->root)->name, (long long)(lo * es),
             (long long)((hi + 1) * es), (unsigned long long)bytes);
    else if ((uint64_t)(hi - lo + 1) * (uint64_t)es > window)
        fail(v, "kernel %u, core %u: access of '%s' spans %llu bytes, more than the core's "
             "%u MiB window", ki, core, ir_val(g, a->root)->name,
             (unsigned long long)((hi - lo + 1) * es), v->t->core_window_mib);
}

/* Box of the items at positions [first, end) of kernel k (start, len per dim;
 * bounding box). */
static void items_box(const IrKernel *k, uint64_t first, uint64_t end, int64_t *start,
                      int64_t *len)
{
    const IrGrid *gr = &k->grid;
    int64_t hi[IR_ITER_MAX] = {0};
    for (uint64_t it = first; it < end; it++) {
        int64_t s[IR_ITER_MAX], l[IR_ITER_MAX];
        plan_kernel_item(k, it, s, l);
        for (int d = 0; d < gr->rank; d++) {
            if (it == first || s[d] < start[d])
                start[d] = s[d];
            if (it == first || s[d] + l[d] > hi[d])
                hi[d] = s[d] + l[d];
        }
    }
    for (int d = 0; d < gr->rank; d++)
        len[d] = hi[d] - start[d];
}

/* Every strided DRAM access of kernel k over each core's items. Not plain strided
 * accesses over the grid: the input of a convolution in patch form and that of a
 * pooling window that absorbed its PAD (both read row by row, clipped to the input:
 * their accesses are at padded coordinates), and the output of a SCATTER (written
 * through its indices; pass_tile checks that it fits one window). */
static void check_accesses(PVfy *v, uint32_t ki, const IrKernel *k)
{
    IrGeom geo;
    plan_geom(v->g, k, &geo);
    bool scatter = k->kind == IR_KK_MOVE && ir_node(v->g, k->anchor)->op == IR_OP_SCATTER;
    bool padwin = plan_window_pad(v->g, k) != NULL;
    int64_t start[IR_ITER_MAX] = {0}, len[IR_ITER_MAX];
    int nd = plan_access_space(v->g, k, len);
    for (uint32_t c = 0; c < k->ncores; c++) {
        if (k->core_first[c + 1] <= k->core_first[c])
            continue;
        items_box(k, k->core_first[c], k->core_first[c + 1], start, len);
        for (int i = 0; i < 3; i++)
            if (!(i == 0 && geo.patch) && !scatter)
                check_access(v, ki, c, &k->acc[i], nd, start, len);
        for (int t = 0; t < 2; t++) {
            const IrTileProg *tp = &k->tp[t];
            for (uint32_t j = 0; j < tp->nvals; j++)
                if (tp->vals[j].src == IR_TV_LOAD && !(t == 0 && padwin))
                    check_access(v, ki, c, &tp->vals[j].acc, nd, start, len);
            if (tp->store)
                check_access(v, ki, c, &tp->out, nd, start, len);
        }
    }
}

bool plan_verify(IrGraph *g, const SpyTarget *t, const char *after_pass)
{
    static const char *const stages[] = {"fuse", "layout", "divide", "tile", "dram_plan"};
    if (!g->plan)
        return true;                       /* before fuse: nothing planned yet */
    PVfy v = {g, g->plan, t, after_pass ? after_pass : "?", 0};
    int st = ST_DRAM;
    for (int i = 0; after_pass && i < (int)(sizeof stages / sizeof stages[0]); i++)
        if (strcmp(after_pass, stages[i]) == 0)
            st = i;
    if (v.p->nvals != g->nvals || v.p->nnodes != g->nnodes) {
        fail(&v, "made for %u values and %u nodes, the graph has %u and %u", v.p->nvals,
             v.p->nnodes, g->nvals, g->nnodes);
        return false;
    }
    check_members(&v);
    if (st >= ST_LAYOUT)
        check_views(&v);
    for (uint32_t i = 0; st >= ST_DIVIDE && v.nerr == 0 && i < v.p->nkernels; i++) {
        check_cores(&v, i, &v.p->kernels[i]);
        if (st >= ST_TILE)
            check_lx(&v, i, &v.p->kernels[i]);
    }
    if (st >= ST_DRAM && v.nerr == 0) {
        check_dram(&v);
        for (uint32_t i = 0; i < v.p->nkernels; i++)
            check_accesses(&v, i, &v.p->kernels[i]);
    }
    return v.nerr == 0;
}
