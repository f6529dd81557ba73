/* plan_print.c: the text dump of the kernel plan (--dump-after, golden tests). */
#include <inttypes.h>

#include "plan.h"

/* "[a/b, c/d]" extents over chunks of a grid. */
static void print_grid(FILE *f, const IrGrid *gr)
{
    fputc('[', f);
    for (int d = 0; d < gr->rank; d++)
        fprintf(f, "%s%" PRId64 "/%" PRId64, d ? "," : "", gr->ext[d], gr->chunk[d]);
    fputc(']', f);
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
    fprintf(f, ", lx [0x%x, 0x%x)%s\n", tp->lx_lo, tp->lx_hi, tp->store ? ", stores" : "");
    for (uint32_t i = 0; i < tp->nvals; i++) {
        const IrTileVal *tv = &tp->vals[i];
        fprintf(f, "      %-5s %-6s %-24s", src[tv->src], cls[tv->cls], ir_val(g, tv->v)->name);
        if (tv->lx != UINT32_MAX)
            fprintf(f, " lx[0x%05x] %u bytes", tv->lx, tv->bytes);
        else
            fprintf(f, " imm 0x%08x", tv->imm);
        fputc('\n', f);
    }
}

/* Print every kernel's plan: kind, members, work items per core, tiles and LX. */
void plan_print(IrGraph *g, FILE *f)
{
    Plan *s = g->plan;
    fprintf(f, "# %u kernels\n", s->nkernels);
    for (uint32_t i = 0; i < s->nkernels; i++) {
        const IrKernel *k = &s->kernels[i];
        fprintf(f, "kernel %u %s (%s): out %s", i, k->name, plan_kernel_kind_name(k->kind),
                ir_val(g, k->out)->name);
        fprintf(f, ", flops %" PRIu64 ", min dram %" PRIu64 " bytes\n", k->flops,
                k->min_dram_bytes);
        if (!k->core_first)
            continue;
        fprintf(f, "    grid ");
        print_grid(f, &k->grid);
        fprintf(f, " = %" PRIu64 " items", k->nitems);
        uint64_t lo = UINT64_MAX, hi = 0;
        uint32_t busy = 0;
        for (uint32_t c = 0; c < k->ncores; c++) {
            uint64_t n = k->core_first[c + 1] - k->core_first[c];
            lo = n < lo ? n : lo;
            hi = n > hi ? n : hi;
            busy += n > 0;
        }
        fprintf(f, ", %u busy cores, %" PRIu64 "..%" PRIu64 " items each", busy,
                lo == UINT64_MAX ? 0 : lo, hi);
        if (k->inner.rank) {
            fprintf(f, ", inner ");
            print_grid(f, &k->inner);
        }
        fprintf(f, ", lx %u bytes\n", k->lx_bytes);
        for (int b = 0; b < IR_KBUF_MAX; b++)
            if (k->buf_bytes[b])
                fprintf(f, "    buf%d lx[0x%05x] %u bytes\n", b, k->buf[b], k->buf_bytes[b]);
        print_tp(g, f, k->kind == IR_KK_REDUCE ? "prologue" : "body", &k->tp[0]);
        print_tp(g, f, "epilogue", &k->tp[1]);
    }
    if (s->arena_bytes + s->seg0_bytes)
        fprintf(f, "# dram: constants %" PRIu64 " bytes, arena %" PRIu64 " bytes\n",
                s->seg0_bytes, s->arena_bytes);
}
