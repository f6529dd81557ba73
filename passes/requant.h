/* requant.h: the fuser's fold of requantization round trips inside a kernel
 * (requant.c). */
#ifndef SPYREC_REQUANT_H
#define SPYREC_REQUANT_H

#include "ir.h"

/* The fuser's view of the graph: per node its group (IR_NONE: none; a folded node's is
 * reset), per value its uses (nuse, graph outputs counted) and the nodes that read it,
 * ulist[ufirst[v]..ufirst[v + 1]), and whether it is a graph output. */
typedef struct {
    uint32_t *grp;
    const uint32_t *nuse, *ufirst;
    const NodeId *ulist;
    const uint8_t *is_out;
} FoldUses;

/* Whether every reader of v is a node of group gi (and v is no graph output). */
bool fuse_uses_inside(const FoldUses *u, ValId v, uint32_t gi);

/* Fold every requantization whose 8-bit value stays inside its group; the count. */
uint32_t fuse_fold_requant(IrGraph *g, const FoldUses *u);

#endif
