/* plan_print.c: the text dump of the kernel plan (--dump-after, golden tests).
 *
 * It shows what each back-end pass decided, as far as the plan is filled:
 *   fuse       kernels (kind, members by role, output), virtual views, values stored
 *              straight into a graph output's segment
 *   layout     STICKED layouts and the final views (root, offset, strides)
 *   divide     the work grid (extent/chunk per dim) and the items of every core
 *   tile       the inner grid, DRAM accesses, anchor LX buffers, tile programs and
 *              their buffers, lx_bytes, the roots each kernel reads
 *   dram_plan  the segment and offset of every stored value, segment sizes
 */
#include <inttypes.h>

#include "isa.h"
#include "plan.h"

/* "[a/b,c/d]" extents over chunks of a grid. */
static void print_grid(FILE *f, const IrGrid *gr)
{
    fputc('[', f);
    for (int d = 0; d < gr->rank; d++)
        fprintf(f, "%s%" PRId64 "/%" PRId64, d ? "," : "", gr->ext[d], gr->chunk[d]);
    fputc(']', f);
}

/* "[a,b,c]" of n integers. */
static void print_ints(FILE *f, const int64_t *v, int n)
{
    fputc('[', f);
    for (int d = 0; d < n; d++)
        fprintf(f, "%s%" PRId64, d ? "," : "", v[d]);
    fputc(']', f);
}

/* " %root+base [strides]" of a DRAM access over nd iteration dims. */
static void print_access(IrGraph *g, FILE *f, const IrAccess *a, int nd)
{
    if (a->root == IR_NONE) {
        fprintf(f, " (none)");
        return;
    }
    fprintf(f, " %%%s+%" PRId64 " ", ir_val(g, a->root)->name, a->base);
    print_ints(f, a->is, nd);
}

/* One line per tile-program value: where it comes from, class, LX buffer. */
static void print_tp(IrGraph *g, FILE *f, const char *what, const IrTileProg *tp)
{
    static const char *const src[] = {"load", "node", "seed", "const"};
    static const char *const cls[] = {"scalar", "row", "col", "full"};
    if (tp->nd == 0 && tp->nvals == 0)
        return;
    fprintf(f, "    %s: %u steps, rows over", what, tp->nsteps);
    for (int i = 0; i < tp->nrow; i++)
        fprintf(f, " d%d", tp->order[i]);
    fprintf(f, ", cols over");
    for (int i = tp->nrow; i < tp->nd; i++)
        fprintf(f, " d%d", tp->order[i]);
    fprintf(f, ", tile ");
    print_ints(f, tp->cap, tp->nd);
    fprintf(f, ", lx [0x%x, 0x%x)", tp->lx_lo, tp->lx_hi);
    if (tp->store) {
        fprintf(f, ", stores to");
        print_access(g, f, &tp->out, tp->nd);
    }
    fputc('\n', f);
    for (uint32_t i = 0; i < tp->nvals; i++) {
        const IrTileVal *tv = &tp->vals[i];
        fprintf(f, "      %-5s %-6s %-24s", src[tv->src], cls[tv->cls], ir_val(g, tv->v)->name);
        if (tv->lx != UINT32_MAX)
            fprintf(f, " lx[0x%05x] %u bytes", tv->lx, tv->bytes);
        else
            fprintf(f, " imm 0x%08x", tv->imm);
        if (tv->src == IR_TV_LOAD) {
            fprintf(f, " from");
            print_access(g, f, &tv->acc, tp->nd);
        }
        fputc('\n', f);
    }
}

/* Members of kernel k by role: "anchor %m, prologue %p, epilogue %a %r". */
static void print_members(IrGraph *g, FILE *f, const IrKernel *k)
{
    static const char *const roles[] = {"anchor", "prologue", "epilogue"};
    const NodeId *lists[3] = {&k->anchor, k->pro, k->epi};
    uint32_t counts[3] = {k->anchor != IR_NONE, k->npro, k->nepi};
    bool any = false;
    fprintf(f, "    nodes:");
    for (int l = 0; l < 3; l++) {
        if (counts[l])
            fprintf(f, "%s %s", any ? "," : "", roles[l]);
        for (uint32_t i = 0; i < counts[l]; i++)
            fprintf(f, " %%%s", ir_val(g, ir_node(g, lists[l][i])->out[0])->name);
        any |= counts[l] > 0;
    }
    if (k->kind == IR_KK_COPY)
        fprintf(f, " none (copies into output %u)", k->out_index);
    fputc('\n', f);
}

/* Items of every core, as runs of cores with the same count: "cores 0-7 x2, 8-31 x0". */
static void print_cores(FILE *f, const IrKernel *k)
{
    fprintf(f, "    items per core:");
    for (uint32_t c = 0; c < k->ncores;) {
        uint64_t n = k->core_first[c + 1] - k->core_first[c];
        uint32_t e = c;
        while (e + 1 < k->ncores && k->core_first[e + 2] - k->core_first[e + 1] == n)
            e++;
        if (e > c)
            fprintf(f, "%s %u-%u x%" PRIu64, c ? "," : "", c, e, n);
        else
            fprintf(f, "%s %u x%" PRIu64, c ? "," : "", c, n);
        c = e + 1;
    }
    fputc('\n', f);
}

/* What divide and tile decided for kernel k (when they have run). */
static void print_division(IrGraph *g, FILE *f, const IrKernel *k)
{
    fprintf(f, "    grid ");
    print_grid(f, &k->grid);
    fprintf(f, " = %" PRIu64 " items", k->nitems);
    if (k->inner.rank) {
        fprintf(f, ", inner ");
        print_grid(f, &k->inner);
    }
    if (k->lx_bytes)                          /* tiled */
        fprintf(f, ", lx %u bytes", k->lx_bytes);
    fputc('\n', f);
    print_cores(f, k);
    int64_t ext[IR_ITER_MAX];
    int nd = plan_access_space(g, k, ext);
    for (int i = 0; i < 3; i++)
        if (k->acc[i].root != IR_NONE) {
            fprintf(f, "    access %d", i);
            print_access(g, f, &k->acc[i], nd);
            fputc('\n', f);
        }
    for (int b = 0; b < IR_KBUF_MAX; b++)
        if (k->buf_bytes[b])
            fprintf(f, "    buf%d lx[0x%05x] %u bytes\n", b, k->buf[b], k->buf_bytes[b]);
    print_tp(g, f, k->kind == IR_KK_REDUCE ? "prologue" : "body", &k->tp[0]);
    print_tp(g, f, "epilogue", &k->tp[1]);
    if (k->nreads) {
        fprintf(f, "    reads");
        for (uint32_t i = 0; i < k->nreads; i++)
            fprintf(f, " %%%s", ir_val(g, k->reads[i])->name);
        fputc('\n', f);
    }
}

/* Name of DRAM segment seg: "const", "arena", "input K", "output K". */
static void print_seg(IrGraph *g, FILE *f, uint32_t seg)
{
    if (seg == ISA_SEG_CONST || seg == ISA_SEG_ARENA)
        fprintf(f, "%s", seg == ISA_SEG_CONST ? "const" : "arena");
    else if (seg - ISA_SEG_IO0 < g->ninputs)
        fprintf(f, "input %u", seg - ISA_SEG_IO0);
    else
        fprintf(f, "output %u", seg - ISA_SEG_IO0 - g->ninputs);
}

/* One line per value the plan says something about: a view of another value's
 * storage, a STICKED layout, a graph output's segment claimed, its DRAM place. */
static void print_values(IrGraph *g, FILE *f, const SpyTarget *t)
{
    const Plan *p = g->plan;
    for (ValId v = 0; v < g->nvals; v++) {
        const PlanValue *pv = &p->val[v];
        bool sticked = pv->layout == IR_LAYOUT_STICKED;
        if (!pv->virt && !sticked && pv->claim < 0 && pv->seg == UINT32_MAX)
            continue;
        fprintf(f, "value %%%s:", ir_val(g, v)->name);
        if (pv->virt)
            fprintf(f, " view of %%%s+%" PRId64, ir_val(g, pv->view.root)->name, pv->view.off);
        if (pv->virt || sticked) {
            fprintf(f, "%s strides ", sticked ? " sticked," : "");
            print_ints(f, pv->view.stride, ir_vtype(g, v)->rank);
        }
        if (pv->claim >= 0)
            fprintf(f, "%s stored in output %d", pv->virt || sticked ? "," : "", pv->claim);
        if (pv->seg != UINT32_MAX) {
            fprintf(f, "%s dram ", pv->virt || sticked || pv->claim >= 0 ? "," : "");
            print_seg(g, f, pv->seg);
            fprintf(f, " @%" PRId64, pv->dram_offset);
            if (pv->view.root == v && t)
                fprintf(f, ", %" PRIu64 " bytes", plan_storage_bytes(g, v, t));
        }
        fputc('\n', f);
    }
}

void plan_print(IrGraph *g, FILE *f, const SpyTarget *t)
{
    Plan *p = g->plan;
    fprintf(f, "# %u kernels\n", p->nkernels);
    for (uint32_t i = 0; i < p->nkernels; i++) {
        const IrKernel *k = &p->kernels[i];
        fprintf(f, "kernel %u %s (%s): out %s", i, k->name, plan_kernel_kind_name(k->kind),
                ir_val(g, k->out)->name);
        fprintf(f, ", flops %" PRIu64 ", min dram %" PRIu64 " bytes\n", k->flops,
                k->min_dram_bytes);
        print_members(g, f, k);
        if (k->core_first)
            print_division(g, f, k);
    }
    print_values(g, f, t);
    if (p->arena_bytes + p->seg0_bytes)
        fprintf(f, "# dram: constants %" PRIu64 " bytes, arena %" PRIu64 " bytes\n",
                p->seg0_bytes, p->arena_bytes);
}
