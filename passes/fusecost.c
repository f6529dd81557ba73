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

/* Modelled seconds of a kernel whose busiest core computes `cycles`, moves ld / st
 * bytes to and from DRAM and receives `ring` bytes over the core ring, `active` cores
 * moving data at the same time, plus its barrier. */
static double kernel_s(const SpyTarget *t, double cycles, double ld, double st, double ring,
                       double active)
{
    double comp = cycles / (t->clock_mhz * 1e6);
    double dram = cost_dram_s(ld + st, active, cost_dram_bw(t, ld, st)) + cost_ring_s(t, ring);
    return cost_core_s(t, comp, dram) + cost_barrier_s(t);
}

/* Share of a tile that its busiest sharer loads from DRAM when `sharers` items share it
 * over the ring (fusecost.h). */
double pass_fusecost_ring_share(uint64_t sharers, double pieces, double nck)
{
    double np = (double)sharers < pieces ? (double)sharers : pieces;
    np = (np < 32 ? np : 32) * (nck > 1 ? nck : 1);
    return (double)(((uint64_t)np + sharers - 1) / sharers) / np;
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
 * element of epilogue inputs; `vec` vector bytes per output element. As the divide
 * pass estimates it, the items of one A (B) tile share it over the core ring
 * (codegen/cg_ring.c): each loads its share from DRAM and receives the rest, the tile
 * cut along its rows in pieces of one row when rows are whole sticks, else of 8. */
static double contract_s(const SpyTarget *t, const FuseRowsMatmul *f, double mt, double nt,
                         double ec, double eb, double vec)
{
    double na = tiles_of(f->m, mt), nb = tiles_of(f->n, nt), items = f->batch * na * nb;
    uint64_t q = ((uint64_t)items + t->cores - 1) / t->cores;
    double cores = t->cores, active = items < cores ? items : cores, floor, ring = 0;
    double a = cost_rows_bytes(t, mt, f->es * f->k), b = cost_rows_bytes(t, f->k, f->es * nt);
    double c = cost_rows_bytes(t, mt, ec * nt), nbl = f->b_shared && nb == 1 && q <= na ? 1 : q;
    double epi = 4.0 + f->eo, budget = 0.8 * t->lx_budget_bytes;
    int64_t kf = pass_divide_fit_depth(f->es, (int64_t)mt, (int64_t)nt, (int64_t)f->k, epi,
                                       budget);
    double nck = (double)(((int64_t)f->k + kf - 1) / kf), da = a, db = b;
    uint64_t sa = (uint64_t)nb / q, sb = (uint64_t)na / q;  /* cores sharing one A / B */
    if (sa > 1) {
        double rows = f->es * f->k >= t->stick_bytes ? mt : (double)(((uint64_t)mt + 7) / 8);
        da = a * pass_fusecost_ring_share(sa, rows, nck);
        ring += (double)q * (a - da);
    }
    if (sb > 1) {                  /* B is cut along its rows (the depth), as A is */
        double rows = f->es * nt >= t->stick_bytes ? (double)kf : (double)((kf + 7) / 8);
        db = b * pass_fusecost_ring_share(sb, rows, nck);
        ring += nbl * (b - db);
    }
    double cyc = (double)q * (cost_matmul_cycles(t, f->dt, mt, nt, f->k, &floor) +
                              cost_vec_cycles(t, mt * nt * vec, false));
    return kernel_s(t, cyc, (double)q * (da + mt * nt * eb) + nbl * db, (double)q * c, ring,
                    active);
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
                      cost_rows_bytes(t, q, f->n * f->eo), 0, active);
    return fused <= split;
}

/* Element size the matrix product's own kernel stores when the group stays apart: fuse
 * then releases the narrowing casts on the chain of single readers from its output
 * (fuse.c release_narrowing: the CAST to DLFloat16 of fp16 mode, the requantization's
 * CAST to 8-bit integers), so the product stores the narrowest of them. */
static double stored_esize(IrGraph *g, ValId v, const NodeId *mem, uint32_t nmem)
{
    double es = pass_dev_esize(ir_vtype(g, v)->dtype);
    for (uint32_t hops = 0; hops < nmem; hops++) {
        const IrNode *r = NULL;
        uint32_t n = 0;
        for (uint32_t m = 0; m < nmem; m++)
            for (int i = 0; i < ir_node(g, mem[m])->nin; i++)
                if (ir_node(g, mem[m])->in[i] == v && (r = ir_node(g, mem[m])) != NULL)
                    n++;
        if (n != 1 || r->nout != 1 || ir_op_info[r->op].cls != IR_CLS_ELEM)
            break;
        v = r->out[0];
        IrDType d = ir_vtype(g, v)->dtype;
        if (r->op == IR_OP_CAST && (d == IR_DT_DLF16 || d == IR_DT_I8 || d == IR_DT_U8) &&
            pass_dev_esize(d) < es)
            es = pass_dev_esize(d);
    }
    return es;
}

/* Vector-unit bytes per output element of the group's nodes: each node's elements
 * (its share of the output's) times its widest device element, as the runtime
 * charges a vector operation (cost_vec_cycles). */
static double group_vec_bytes(IrGraph *g, const NodeId *mem, uint32_t nmem, double numel)
{
    double sum = 0;
    for (uint32_t m = 0; m < nmem; m++) {
        const IrNode *x = ir_node(g, mem[m]);
        if (x->nout != 1)
            continue;
        const IrType *o = ir_vtype(g, x->out[0]);
        double w = pass_dev_esize(o->dtype), n = (double)plan_numel(o);
        for (int i = 0; i < x->nin; i++)
            if (x->in[i] != IR_NONE) {
                const IrType *it = ir_vtype(g, x->in[i]);
                w = pass_dev_esize(it->dtype) > w ? pass_dev_esize(it->dtype) : w;
                n = (double)plan_numel(it) > n ? (double)plan_numel(it) : n;
            }
        sum += w * (n < numel ? n : numel) / numel;
    }
    return sum;
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
                        stored_esize(g, nd->out[0], mem, nmem),
                        pass_dev_esize(ir_vtype(g, out)->dtype), 0,
                        group_vec_bytes(g, mem, nmem, (double)plan_numel(c)) / 4.0,
                        (unsigned)pass_dev_dtype(a->dtype), true};
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
