/* fusecost.c: cost checks of fusion decisions (fusecost.h).
 *
 * A fusion that looks free (an intermediate never reaches DRAM) can still make a
 * kernel slower: a matrix product absorbed into a row-resident group (layer norm
 * after a projection) must keep whole output rows on a core, so with few rows only a
 * few cores take part and each loads the whole weight. These estimates use the same
 * cost model as the divide pass (schemas/costmodel.h: per-core compute at the
 * operand's matrix rate and the vector rate, DRAM charged by whole sticks at the
 * shared bandwidth, overlap, barriers), over the same tile candidates (rows in
 * multiples of 8, columns in multiples of one fp32 stick), so that fuse keeps the
 * fusion only when the model says it is faster.
 */
#include "fusecost.h"

#include "costmodel.h"
#include "devtype.h"
#include "plan/plan.h"

/* Modelled seconds of a kernel whose busiest core computes `cycles` and moves ld / st
 * bytes, `active` cores moving data at the same time, plus its barrier. */
static double kernel_s(const SpyTarget *t, double cycles, double ld, double st, double active)
{
    double comp = cycles / (t->clock_mhz * 1e6);
    double dram = cost_dram_s(ld + st, active, cost_dram_bw(t, ld, st));
    return cost_core_s(t, comp, dram) + cost_barrier_s(t);
}

/* Items of `n` split into tiles of `tile`. */
static double tiles_of(double n, double tile)
{
    return tile > 0 ? (double)(((uint64_t)n + (uint64_t)tile - 1) / (uint64_t)tile) : 1;
}

/* Next smaller tile candidate of x in multiples of gran (x when none). */
static double smaller(double x, double gran)
{
    if (x <= gran)
        return x;
    double h = (double)(((uint64_t)x / 2 + (uint64_t)gran - 1) / (uint64_t)gran) * gran;
    return h >= x ? x - gran : h;
}

/* Modelled seconds of the contraction split into mt x nt output tiles: each item
 * loads its A rows and B columns (B once per core when shared and the core keeps one
 * column tile), stores its C tile (element size ec) and loads `eb` bytes per output
 * element of epilogue inputs; `vec` vector bytes per output element. */
static double contract_s(const SpyTarget *t, const FuseRowsMatmul *f, double mt, double nt,
                         double ec, double eb, double vec)
{
    double na = tiles_of(f->m, mt), nb = tiles_of(f->n, nt), items = f->batch * na * nb;
    double cores = t->cores, q = (double)(((uint64_t)items + t->cores - 1) / t->cores);
    double active = items < cores ? items : cores, floor;
    double a = cost_rows_bytes(t, mt, f->es * f->k), b = cost_rows_bytes(t, f->k, f->es * nt);
    double c = cost_rows_bytes(t, mt, ec * nt);
    double bload = f->b_shared && nb == 1 && q <= na ? b : q * b;
    double cyc = q * (cost_matmul_cycles(t, f->dt, mt, nt, f->k, &floor) +
                      cost_vec_cycles(t, mt * nt * vec, false));
    return kernel_s(t, cyc, q * a + bload + q * mt * nt * eb, q * c, active);
}

/* Whether fusing is faster (fusecost.h). */
bool pass_fusecost_rows_matmul(const SpyTarget *t, const FuseRowsMatmul *f)
{
    if (!t || t->cores == 0 || f->m <= 0 || f->n <= 0)
        return true;
    double rows = f->batch * f->m, ext = f->ext / rows / f->n;  /* per output element */
    double vec = 4.0 * f->steps, fused = -1, split = -1;
    for (double mt = f->m;; mt = smaller(mt, 8)) {
        double s = contract_s(t, f, mt, f->n, f->eo, ext, vec);
        fused = fused < 0 || s < fused ? s : fused;
        if (smaller(mt, 8) == mt)
            break;
    }
    for (double mt = f->m;; mt = smaller(mt, 8)) {
        for (double nt = f->n;; nt = smaller(nt, 32)) {
            double s = contract_s(t, f, mt, nt, f->ec, 0, 0);
            split = split < 0 || s < split ? s : split;
            if (smaller(nt, 32) == nt)
                break;
        }
        if (smaller(mt, 8) == mt)
            break;
    }
    /* the row kernel: rows over every core, loading C and the other inputs */
    double q = (double)(((uint64_t)rows + t->cores - 1) / t->cores);
    double rb = cost_rows_bytes(t, q, f->n * f->ec) + cost_rows_bytes(t, q, f->n * ext);
    double active = rows < t->cores ? rows : t->cores;
    split += kernel_s(t, cost_vec_cycles(t, q * f->n * vec, false), rb,
                      cost_rows_bytes(t, q, f->n * f->eo), active);
    return fused <= split;
}

/* The check for fuse's group (fusecost.h): the matrix product's shapes and element
 * sizes, and the bytes of the group's inputs from outside it. */
bool pass_fusecost_rows_group(IrGraph *g, const SpyTarget *t, NodeId mm, const NodeId *mem,
                              uint32_t nmem, const uint32_t *grp, uint32_t gi, ValId out)
{
    const IrNode *nd = ir_node(g, mm);
    const IrType *a = ir_vtype(g, nd->in[0]), *b = ir_vtype(g, nd->in[1]);
    const IrType *c = ir_vtype(g, nd->out[0]);
    FuseRowsMatmul e = {1, (double)c->dims[c->rank - 2], (double)c->dims[c->rank - 1],
                        (double)a->dims[a->rank - 1], pass_dev_esize(a->dtype),
                        pass_dev_esize(c->dtype), pass_dev_esize(ir_vtype(g, out)->dtype), 0,
                        nmem, (unsigned)pass_dev_dtype(a->dtype), true};
    for (int d = 0; d < c->rank - 2; d++)
        e.batch *= (double)c->dims[d];
    for (int d = 0; d < b->rank - 2; d++)
        e.b_shared &= b->dims[d] == 1;
    for (uint32_t m = 0; m < nmem; m++) {
        const IrNode *x = ir_node(g, mem[m]);
        for (int i = 0; i < x->nin; i++) {
            if (x->in[i] == IR_NONE)
                continue;
            NodeId p = ir_val(g, x->in[i])->def;
            if (x->in[i] != nd->out[0] && (p == IR_NONE || grp[p] != gi))
                e.ext += (double)plan_numel(ir_vtype(g, x->in[i])) *
                         pass_dev_esize(ir_vtype(g, x->in[i])->dtype);
        }
    }
    if (e.es <= 0 || e.ec <= 0 || e.eo <= 0)
        return true;
    return pass_fusecost_rows_matmul(t, &e);
}
