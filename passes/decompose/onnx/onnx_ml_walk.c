/* onnx_ml_walk.c: the walk form of a tree ensemble (onnx_ml.h dec_ml_walk), for forests
 * whose matrix form (onnx_ml_tree.c) would be too large: a default scikit-learn random
 * forest has 100 trees of several hundred leaves, and the matrix form's path matrix
 * grows with trees x nodes x leaves, the walk's tables with the nodes only.
 *
 * Nodes are numbered globally: internal node i as i, leaf l as nnodes + l. The tables
 * (one entry per global node) hold the feature, split value, mode, missing-value
 * direction and both children; a leaf's children are itself, so a sample that reached
 * a leaf stays there for the remaining levels. Every level costs a few gathers of
 * [N, T] indices from the tables and one comparison of [N, T, F] (the feature of each
 * sample's node picked from its row, where a NaN stays NaN).
 */
#include <math.h>
#include <string.h>

#include "onnx_ml.h"

/* Global index of child `ch` (a leaf index when leaf) of forest f. */
static int64_t walk_global(const MlForest *f, int64_t ch, bool leaf)
{
    return leaf ? f->nnodes + ch : ch;
}

/* A constant table of g entries of type t, from v. */
static ValId walk_table(DecCtx *c, IrDType t, int64_t g, const double *v)
{
    return dec_const(c->g, t, &g, 1, v);
}

/* The feature each sample's node tests, picked from rows x [N, F]: [N, T]. */
static ValId walk_pick(DecCtx *c, ValId x, ValId feat)
{
    const IrType *tx = dec_ty(c, x), *ti = dec_ty(c, feat);
    int64_t f = tx->dims[1], x3[3] = {tx->dims[0], 1, f}, i3[3] = {ti->dims[0], ti->dims[1], 1};
    int64_t a3[3] = {1, 1, f}, ax = 2;
    int64_t *ar = ir_scratch(c->g, (size_t)f * sizeof *ar);
    for (int64_t i = 0; i < f; i++)
        ar[i] = i;
    ValId eq = dec_bin(c, IR_BIN_EQ, dec_reshape(c, feat, i3, 3), dec_const_i64(c->g, a3, 3, ar));
    ValId v = dec_select(c, eq, dec_reshape(c, x, x3, 3), dec_scalar(c->g, IR_DT_F32, 0.0));
    return dec_reduce(c, IR_RED_SUM, v, &ax, 1, false);
}

/* Whether each sample goes to its node's true child: the node's test of xv against
 * split value th by mode md (gathered), NaN where missing_value_tracks_true says. */
static ValId walk_test(DecCtx *c, ValId xv, ValId th, ValId md, ValId miss, const bool *used)
{
    static const int cmp[] = {IR_BIN_LE, IR_BIN_LT, IR_BIN_GE, IR_BIN_GT, IR_BIN_EQ, IR_BIN_NE};
    ValId cond = IR_NONE;
    for (int m = 0; m < MLT_MEMBER; m++) {
        if (!used[m])
            continue;
        ValId v = dec_bin(c, IR_BIN_AND, dec_bin(c, cmp[m], xv, th),
                          dec_bin_s(c, IR_BIN_EQ, md, (double)m));
        cond = cond == IR_NONE ? v : dec_bin(c, IR_BIN_OR, cond, v);
    }
    if (cond == IR_NONE)
        cond = dec_bin(c, IR_BIN_NE, xv, xv);      /* no test used: false (NaN aside) */
    if (miss != IR_NONE)
        cond = dec_bin(c, IR_BIN_OR, cond, dec_bin(c, IR_BIN_AND, dec_un(c, IR_UN_ISNAN, xv),
                                                   dec_bin_s(c, IR_BIN_GT, miss, 0.0)));
    return cond;
}

ValId dec_ml_walk(DecCtx *c, const MlForest *f, ValId x, bool average, int depth)
{
    x = dec_cast(c, x, IR_DT_F32);
    int64_t g = f->nnodes + f->nleaves, k = f->ntargets, t = f->ntrees;
    double *feat = ir_scratch(c->g, (size_t)g * sizeof *feat), *thr = ir_scratch(c->g, (size_t)g * 8);
    double *mode = ir_scratch(c->g, (size_t)g * 8), *miss = ir_scratch(c->g, (size_t)g * 8);
    double *tch = ir_scratch(c->g, (size_t)g * 8), *fch = ir_scratch(c->g, (size_t)g * 8);
    double *w = ir_scratch(c->g, (size_t)(g * k) * 8), *root = ir_scratch(c->g, (size_t)t * 8);
    bool used[MLT_LEAF + 1] = {false}, anymiss = false;
    memset(w, 0, (size_t)(g * k) * 8);
    for (int64_t i = 0; i < g; i++) {
        const MlNode *n = i < f->nnodes ? &f->node[i] : NULL;
        bool internal = n && n->mode != MLT_LEAF;
        if (internal && n->mode == MLT_MEMBER) {
            dec_err(c, "unsupported: BRANCH_MEMBER nodes in a forest this large");
            return IR_NONE;
        }
        if (internal && (n->feat < 0 || n->feat >= dec_ty(c, x)->dims[1])) {
            dec_err(c, "node %lld tests feature %lld of %lld", (long long)i, (long long)n->feat,
                    (long long)dec_ty(c, x)->dims[1]);
            return IR_NONE;
        }
        feat[i] = internal ? (double)n->feat : 0;
        thr[i] = internal ? n->thr : 0;
        mode[i] = internal ? n->mode : MLT_LEQ;
        miss[i] = internal && n->miss_true;
        tch[i] = internal ? (double)walk_global(f, n->tchild, n->tleaf) : (double)i;
        fch[i] = internal ? (double)walk_global(f, n->fchild, n->fleaf) : (double)i;
        used[(int)mode[i]] |= internal;
        anymiss |= internal && n->miss_true;
        for (int64_t j = 0; i >= f->nnodes && j < k; j++)
            w[i * k + j] = f->leafw[(i - f->nnodes) * k + j];
    }
    for (int64_t r = 0; r < t; r++)
        root[r] = f->root[r] >= 0 ? (double)f->root[r] : (double)(f->nnodes - 1 - f->root[r]);
    ValId featc = walk_table(c, IR_DT_I64, g, feat), thrc = walk_table(c, IR_DT_F32, g, thr);
    ValId modec = walk_table(c, IR_DT_F32, g, mode), tchc = walk_table(c, IR_DT_I64, g, tch);
    ValId fchc = walk_table(c, IR_DT_I64, g, fch);
    ValId missc = anymiss ? walk_table(c, IR_DT_F32, g, miss) : IR_NONE;
    int64_t r2[2] = {1, t}, e2[2] = {dec_ty(c, x)->dims[0], t}, wd[2] = {g, k}, ax = 1;
    ValId idx = dec_expand(c, dec_const(c->g, IR_DT_I64, r2, 2, root), e2, 2);
    for (int d = 0; d < depth; d++) {
        ValId xv = walk_pick(c, x, dec_gather(c, featc, idx, 0));
        ValId cond = walk_test(c, xv, dec_gather(c, thrc, idx, 0), dec_gather(c, modec, idx, 0),
                               missc != IR_NONE ? dec_gather(c, missc, idx, 0) : IR_NONE, used);
        idx = dec_select(c, cond, dec_gather(c, tchc, idx, 0), dec_gather(c, fchc, idx, 0));
    }
    ValId y = dec_gather(c, dec_const(c->g, IR_DT_F32, wd, 2, w), idx, 0);   /* [N, T, K] */
    y = dec_reduce(c, IR_RED_SUM, y, &ax, 1, false);
    return average ? dec_bin_s(c, IR_BIN_DIV, y, (double)t) : y;
}
