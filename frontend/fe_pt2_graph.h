/* fe_pt2_graph.h: graph conversion state, shared by fe_pt2_graph.c and fe_pt2_args.c. */
#ifndef SPYREC_FE_PT2_GRAPH_H
#define SPYREC_FE_PT2_GRAPH_H

#include "frontend/fe_pt2_priv.h"

#define FE_PT2_MAX_NODE_INPUTS 4096      /* tensor inputs of one node */
#define FE_PT2_MAX_NODE_ATTRS 256        /* arguments of one node (+1 for _in_names, +1
                                            for _in_strided) */

/* One graph level (the top graph or an inlined subgraph): tensor names are local. */
typedef struct {
    json_t *graph;                         /* the serialized Graph (borrowed) */
    json_t *names;                         /* name -> ValId (json integers), owned */
    json_t *tensor_values;                 /* name -> TensorMeta (borrowed) */
    int depth;                             /* 0 for the top graph */
    json_t *views;                         /* view name -> [base name, view NodeId]
                                            * (fe_pt2_views.c), owned like names */
    const FePt2Syms *syms;                 /* the program's symbolic sizes (fe_pt2_sym.c) */
} FePt2Scope;

/* The converted arguments of one node. */
typedef struct {
    ValId in[FE_PT2_MAX_NODE_INPUTS];
    const char *in_names[FE_PT2_MAX_NODE_INPUTS];
    int64_t in_strided[FE_PT2_MAX_NODE_INPUTS]; /* 1: recorded as a strided view */
    int nin;
    IrAttr attrs[FE_PT2_MAX_NODE_ATTRS + 1];
    int nattrs;
} FePt2Args;

typedef struct {
    FePt2 *p;
    IrGraph *g;
    FePt2Args *args;                       /* scratch for the node being converted */
} FePt2Build;

ValId fe_pt2_lookup(FePt2Build *b, FePt2Scope *s, const char *name, const IrOrigin *o);
void fe_pt2_bind(FePt2Scope *s, const char *name, ValId v);
/* Convert a node's named arguments into *a (overwritten). */
bool fe_pt2_args(FePt2Build *b, FePt2Scope *s, json_t *inputs, const IrOrigin *o,
                 FePt2Args *a);

#endif
