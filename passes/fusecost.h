/* fusecost.h: cost checks of fusion decisions (passes/fusecost.c), by the cost model
 * the divide pass and the runtime use (schemas/costmodel.h). */
#ifndef SPYREC_FUSECOST_H
#define SPYREC_FUSECOST_H

#include <stdbool.h>
#include <stdint.h>

#include "ir.h"
#include "target.h"

/* A matrix product C[batch, m, n] = A[batch, m, k] B[(batch), k, n] whose result feeds
 * a row-resident group (reductions over n, whole rows in LX): element sizes of the
 * operands (es, with the matrix rate of ISA dtype dt), of C as stored when the group
 * is a kernel of its own (ec) and of the group's result (eo); B shared by every batch
 * entry (a weight) or one per entry; ext: bytes of the group's other inputs; steps:
 * the group's vector work per output element, in passes over 4-byte elements (each
 * node counts its widest device element and its share of the output's elements). */
typedef struct {
    double batch, m, n, k;
    double es, ec, eo, ext, steps;
    unsigned dt;
    bool b_shared;
} FuseRowsMatmul;

/* Whether the matrix product is faster as the anchor of the row group (one kernel, N
 * whole rows on a core, so every core that takes rows loads all of a shared B) than
 * as a contraction kernel of its own followed by the row kernel. */
bool pass_fusecost_rows_matmul(const SpyTarget *t, const FuseRowsMatmul *f);

/* The same check for matmul node mm as the anchor of the row-resident group gi of fuse
 * (members mem[0..nmem), grp: each node's group, out: the group's result): its figures
 * read from the graph. */
bool pass_fusecost_rows_group(IrGraph *g, const SpyTarget *t, NodeId mm, const NodeId *mem,
                              uint32_t nmem, const uint32_t *grp, uint32_t gi, ValId out);

/* Share of a tile that its busiest sharer loads from DRAM when `sharers` items share it
 * over the ring: the tile goes in pieces (at most one per sharer, at most `pieces`
 * and 32, CG_CACHE_MAX / 2, per depth chunk), dealt round-robin (codegen/cg_ring.c
 * cg_load_shared); nck depth chunks. */
double pass_fusecost_ring_share(uint64_t sharers, double pieces, double nck);

/* Depth chunk of an mt x nt tile of a kk-deep product with operand elements of es
 * bytes, epi LX bytes per output element and an LX budget of `budget` bytes, as
 * pass_tile keeps it (passes/divide.c). */
int64_t pass_divide_fit_depth(double es, int64_t mt, int64_t nt, int64_t kk, double epi,
                              double budget);

#endif
