/* tile.h: internals of the tiling pass (passes/tile.c, passes/tile_prog.c). */
#ifndef SPYREC_TILE_H
#define SPYREC_TILE_H

#include "plan/plan.h"

/* Map from a kernel iteration space to a reference shape (the shape the tile
 * program's values broadcast to): ref index j = sum_d coef[j][d] * i_d. */
typedef struct {
    int nd;
    int rrank;
    int64_t rdims[IR_MAX_RANK];
    int64_t coef[IR_MAX_RANK][IR_ITER_MAX];
} TileMap;

/* What a tile program computes (see IrTileProg). */
typedef struct {
    const TileMap *map;
    int nrow;                  /* order[0..nrow) are tile rows */
    int order[IR_ITER_MAX];
    int64_t cap[IR_ITER_MAX];  /* tile extent per iteration dim */
    const NodeId *steps;
    uint32_t nsteps;
    ValId seed;                /* value already in LX (IR_NONE if none) */
    uint32_t seed_lx;
    ValId xseed[2];            /* more values already in LX: a matmul's side sums (row,
                                  column; IR_NONE if none) */
    uint32_t xseed_lx[2];
    ValId result;
    bool force_full;           /* the result must be a full rows x cols tile */
    bool store;                /* store the result through its own view */
} TileSpec;

/* Identity map over shape t. */
void tile_map_identity(TileMap *m, const IrType *t);
/* Access of value v over m: through its DRAM view, or (logical) its own dense shape. */
void tile_access(IrGraph *g, const TileMap *m, ValId v, bool logical, IrAccess *a);
/* Build a tile program with buffers from lx_base on. Its arrays live in the pass's
 * scratch (an out of memory longjmps to g->oom and leaks nothing): tile_prog_keep
 * moves a program the plan keeps into the graph's arena; tile_prog_free drops one
 * that is not wanted. False (reported to g->diag) when a constant does not fit the
 * device's int32. */
bool tile_prog_build(IrGraph *g, const TileSpec *sp, uint32_t lx_base, IrTileProg *tp);
void tile_prog_free(IrTileProg *tp);
void tile_prog_keep(IrGraph *g, IrTileProg *tp);

static inline uint64_t tile_align(uint64_t x)
{
    return (x + IR_LX_ALIGN - 1) / IR_LX_ALIGN * IR_LX_ALIGN;
}

#endif
