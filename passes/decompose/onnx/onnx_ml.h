/* onnx_ml.h: the tree-ensemble form shared by the ai.onnx.ml lowerings: the matrix form
 * (onnx_ml_tree.c, which reads the operators into it) and the walk form used for forests
 * too large for it (onnx_ml_walk.c).
 */
#ifndef ONNX_ML_H
#define ONNX_ML_H

#include "onnx.h"

enum { MLT_LEQ, MLT_LT, MLT_GTE, MLT_GT, MLT_EQ, MLT_NEQ, MLT_MEMBER, MLT_LEAF };

typedef struct {                /* one node of the input's numbering */
    int64_t feat, tchild, fchild, set0, nset;
    double thr;
    int mode;                   /* MLT_* */
    bool tleaf, fleaf;          /* children are leaf indices (TreeEnsemble), not nodes */
    bool miss_true;
} MlNode;

typedef struct {
    int64_t nnodes, nleaves, ntrees, ntargets;
    MlNode *node;
    int64_t *root;              /* per tree: node index, or -1 - leaf index */
    double *leafw;              /* [nleaves, ntargets] */
    const double *sets;         /* membership values of the MEMBER nodes */
} MlForest;

/* The forest's scores [N, K] for rows x [N, F] by walking every tree one level at a
 * time (onnx_ml_walk.c): per level each sample's node in each tree is a gather from
 * the node tables, its feature picked from x by comparison with the feature ids (no
 * gather from x, so a bounded symbolic batch stays whole), the next node a select of
 * the children; leaves loop on themselves, and after `depth` levels (the deepest
 * path) the leaves' weights are gathered and summed over the trees (averaged with
 * average). IR_NONE, reported, for MEMBER nodes. */
ValId dec_ml_walk(DecCtx *c, const MlForest *f, ValId x, bool average, int depth);

#endif
