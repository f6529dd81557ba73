/* onnx_ml_tree.c: tree ensembles of the ai.onnx.ml domain (what skl2onnx, onnxmltools
 * and the XGBoost / LightGBM converters write for random forests and gradient boosting)
 * as core ops: TreeEnsemble (version 5), TreeEnsembleRegressor and TreeEnsembleClassifier
 * (versions 1 and 3).
 *
 * Both are read into one form (MlForest: per tree its internal nodes and its leaves,
 * each leaf with the path of branch decisions that reaches it and its weight per
 * target), then evaluated without data-dependent control flow, as matrix products (the
 * "GEMM" form of tree inference), trees batched along the leading axis:
 *   xf    [T, N, I]  the feature each internal node tests, gathered from X
 *   cond  [T, N, I]  the node's test (<=, <, >=, >, ==, != against its split value, or
 *                    membership in its set; NaN goes where missing_value_tracks_true
 *                    says), as 0 / 1
 *   reach [T, N, L]  cond @ P == need, P [T, I, L] +1 where a leaf's path needs the node
 *                    true, -1 where false, need the count of +1s: exactly the leaf each
 *                    sample reaches (sums of small integers are exact)
 *   y     [N, K]     sum over trees of reach @ W [T, L, K] (leaf weights per target),
 *                    averaged for AVERAGE, plus base values, then the post transform.
 * Trees are padded to the largest's nodes I and leaves L; a padding leaf needs -1 true
 * nodes and is never reached. The products' constants are capped (MLT_MAX_ELEMS);
 * larger forests (a default scikit-learn random forest) take the walk form instead
 * (onnx_ml_walk.c: level by level through node tables). MIN and MAX aggregation, and the post
 * transforms SOFTMAX_ZERO and PROBIT, are refused by name. TreeEnsembleClassifier sums
 * class weights the same way; onnx_ml_class.c makes its label and scores.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx.h"
#include "onnx_ml.h"

#define MLT_MAX_ELEMS ((int64_t)1 << 24)  /* elements of P, W or the member sets, at most */

/* Per tree after the walk: internal nodes and leaves in local order, and the paths. */
typedef struct {
    int64_t *inode;             /* [tree][Imax]: node index, -1 padding */
    int64_t *ileaf;             /* [tree][Lmax]: leaf index, -1 padding */
    int8_t *path;               /* [tree][Imax][Lmax]: +1 / -1 / 0 */
    int64_t imax, lmax;
} MlFlat;

/* Float values of attribute (or tensor attribute) name: count, or -1 when absent. */
static int64_t ml_floats(DecCtx *c, const char *name, const double **out)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a)
        return -1;
    if (a->kind == IR_ATTR_FLOATS) {
        *out = a->floats;
        return a->n;
    }
    if (a->kind == IR_ATTR_TENSOR && ir_is_const(c->g, a->tensor)) {
        const IrType *t = dec_ty(c, a->tensor);
        int64_t n = dec_numel(t);
        double *v = ir_scratch(c->g, (size_t)(n + 1) * sizeof *v);
        for (int64_t i = 0; i < n; i++)
            v[i] = dec_load(t->dtype, ir_val(c->g, a->tensor)->data, i);
        *out = v;
        return n;
    }
    return -1;
}

/* Int values of an ints or integer tensor attribute (TreeEnsemble's nodes_modes). */
static int64_t ml_ints(DecCtx *c, const char *name, const int64_t **out)
{
    int n = dec_aints(c, name, out);
    if (n >= 0)
        return n;
    const double *f;
    int64_t m = ml_floats(c, name, &f);
    if (m < 0)
        return -1;
    int64_t *v = ir_scratch(c->g, (size_t)(m + 1) * sizeof *v);
    for (int64_t i = 0; i < m; i++)
        v[i] = (int64_t)f[i];
    *out = v;
    return m;
}

/* The leaves of tree t reached from node `at` (index into f->node, or -1 - leaf),
 * appending its internal nodes and leaves to the flat lists with the path so far
 * (dirs of the nodes on it, `depth` entries, local node indices in pn). */
static bool ml_walk(DecCtx *c, const MlForest *f, MlFlat *fl, int64_t t, int64_t at,
                    int64_t *ni, int64_t *nl, int64_t *pn, int8_t *pd, int depth)
{
    if (depth > 256 || *ni > fl->imax || *nl > fl->lmax) {
        dec_err(c, "tree %lld is deeper than 256 or not a tree", (long long)t);
        return false;
    }
    if (at < 0) {                                   /* a leaf */
        int64_t l = *nl;
        if (l >= fl->lmax)
            return false;
        fl->ileaf[t * fl->lmax + l] = -1 - at;
        for (int i = 0; i < depth; i++)
            fl->path[(t * fl->imax + pn[i]) * fl->lmax + l] = pd[i];
        (*nl)++;
        return true;
    }
    const MlNode *n = &f->node[at];
    int64_t me = (*ni)++;
    if (me >= fl->imax)
        return false;
    fl->inode[t * fl->imax + me] = at;
    pn[depth] = me;
    pd[depth] = 1;
    if (!ml_walk(c, f, fl, t, n->tleaf ? -1 - n->tchild : n->tchild, ni, nl, pn, pd, depth + 1))
        return false;
    pd[depth] = -1;
    return ml_walk(c, f, fl, t, n->fleaf ? -1 - n->fchild : n->fchild, ni, nl, pn, pd,
                   depth + 1);
}

/* Counts of internal nodes and leaves under `at` (the flat sizes), with a depth cap. */
static bool ml_count(const MlForest *f, int64_t at, int64_t *ni, int64_t *nl, int depth,
                     int *deepest)
{
    if (depth > 256)
        return false;
    if (at < 0) {
        (*nl)++;
        *deepest = depth > *deepest ? depth : *deepest;
        return -1 - at < f->nleaves;
    }
    if (at >= f->nnodes)
        return false;
    const MlNode *n = &f->node[at];
    (*ni)++;
    int64_t tc = n->tleaf ? -1 - n->tchild : n->tchild, fc = n->fleaf ? -1 - n->fchild : n->fchild;
    if ((n->tleaf && (n->tchild < 0 || n->tchild >= f->nleaves)) ||
        (n->fleaf && (n->fchild < 0 || n->fchild >= f->nleaves)) ||
        (!n->tleaf && n->tchild < 0) || (!n->fleaf && n->fchild < 0))
        return false;
    return ml_count(f, tc, ni, nl, depth + 1, deepest) &&
           ml_count(f, fc, ni, nl, depth + 1, deepest);
}

/* The flat form of forest f; false with *walk set (nothing reported) when the matrix
 * form would exceed MLT_MAX_ELEMS, and *depth the deepest path, for the walk form. */
static bool ml_flatten(DecCtx *c, const MlForest *f, MlFlat *fl, bool *walk, int *depth)
{
    fl->imax = fl->lmax = 1;
    *walk = false;
    *depth = 0;
    for (int64_t t = 0; t < f->ntrees; t++) {
        int64_t ni = 0, nl = 0;
        if (!ml_count(f, f->root[t], &ni, &nl, 0, depth)) {
            dec_err(c, "tree %lld: a child index out of range, a cycle or depth over 256",
                    (long long)t);
            return false;
        }
        fl->imax = ni > fl->imax ? ni : fl->imax;
        fl->lmax = nl > fl->lmax ? nl : fl->lmax;
    }
    int64_t pe = f->ntrees * fl->imax * fl->lmax, we = f->ntrees * fl->lmax * f->ntargets;
    if (pe > MLT_MAX_ELEMS || we > MLT_MAX_ELEMS) {
        *walk = true;
        return false;
    }
    fl->inode = ir_scratch(c->g, (size_t)(f->ntrees * fl->imax) * sizeof *fl->inode);
    fl->ileaf = ir_scratch(c->g, (size_t)(f->ntrees * fl->lmax) * sizeof *fl->ileaf);
    fl->path = ir_scratch(c->g, (size_t)pe);
    memset(fl->inode, 0xff, (size_t)(f->ntrees * fl->imax) * sizeof *fl->inode);
    memset(fl->ileaf, 0xff, (size_t)(f->ntrees * fl->lmax) * sizeof *fl->ileaf);
    memset(fl->path, 0, (size_t)pe);
    int64_t pn[260];
    int8_t pd[260];
    for (int64_t t = 0; t < f->ntrees; t++) {
        int64_t ni = 0, nl = 0;
        if (!ml_walk(c, f, fl, t, f->root[t], &ni, &nl, pn, pd, 0))
            return false;
    }
    return true;
}

/* A float constant [d0, d1, d2] of v (rank 3, or 2 when d0 is 0). */
static ValId ml_const(DecCtx *c, int64_t d0, int64_t d1, int64_t d2, const double *v)
{
    int64_t dims[3] = {d0, d1, d2};
    return d0 ? dec_const(c->g, IR_DT_F32, dims, 3, v) : dec_const(c->g, IR_DT_F32, dims + 1, 2, v);
}

/* cond [T, N, I] as 0 / 1 floats: each internal node's test of its feature in xf. */
static ValId ml_conditions(DecCtx *c, const MlForest *f, const MlFlat *fl, ValId xf)
{
    int64_t t = f->ntrees, im = fl->imax, n = t * im, vmax = 1;
    double *thr = ir_scratch(c->g, (size_t)n * sizeof *thr);
    double *mm[MLT_LEAF + 1], *miss = ir_scratch(c->g, (size_t)n * sizeof *miss);
    bool used[MLT_LEAF + 1] = {false}, anymiss = false;
    for (int m = 0; m <= MLT_LEAF; m++)
        mm[m] = ir_scratch(c->g, (size_t)n * sizeof *mm[m]);
    for (int64_t i = 0; i < n; i++) {
        int64_t k = fl->inode[i];
        const MlNode *nd = k >= 0 ? &f->node[k] : NULL;
        thr[i] = nd ? nd->thr : 0;
        for (int m = 0; m <= MLT_LEAF; m++)
            mm[m][i] = nd && nd->mode == m;
        if (nd) {
            used[nd->mode] = true;
            miss[i] = nd->miss_true;
            anymiss |= nd->miss_true;
            vmax = nd->mode == MLT_MEMBER && nd->nset > vmax ? nd->nset : vmax;
        } else {
            miss[i] = 0;
        }
    }
    ValId th = ml_const(c, t, 1, im, thr), cond = IR_NONE;
    static const int cmp[] = {IR_BIN_LE, IR_BIN_LT, IR_BIN_GE, IR_BIN_GT, IR_BIN_EQ, IR_BIN_NE};
    for (int m = 0; m < MLT_MEMBER; m++) {
        if (!used[m])
            continue;
        ValId v = dec_bin(c, IR_BIN_MUL, dec_cast(c, dec_bin(c, cmp[m], xf, th), IR_DT_F32),
                          ml_const(c, t, 1, im, mm[m]));
        cond = cond == IR_NONE ? v : dec_bin(c, IR_BIN_ADD, cond, v);
    }
    if (used[MLT_MEMBER]) {
        if (n * vmax > MLT_MAX_ELEMS) {
            dec_err(c, "unsupported: membership sets of %lld values", (long long)vmax);
            return IR_NONE;
        }
        double *sv = ir_scratch(c->g, (size_t)(n * vmax) * sizeof *sv);
        for (int64_t i = 0; i < n; i++) {
            int64_t k = fl->inode[i];
            const MlNode *nd = k >= 0 ? &f->node[k] : NULL;
            for (int64_t j = 0; j < vmax; j++)
                sv[i * vmax + j] = nd && nd->mode == MLT_MEMBER && j < nd->nset
                                       ? f->sets[nd->set0 + j] : NAN;
        }
        const IrType *tx = dec_ty(c, xf);
        int64_t d4[4] = {t, tx->dims[1], im, 1}, s4[4] = {t, 1, im, vmax}, ax = 3;
        ValId eq = dec_bin(c, IR_BIN_EQ, dec_reshape(c, xf, d4, 4),
                           dec_const(c->g, IR_DT_F32, s4, 4, sv));
        ValId any = dec_reduce(c, IR_RED_MAX, dec_cast(c, eq, IR_DT_F32), &ax, 1, false);
        ValId v = dec_bin(c, IR_BIN_MUL, any, ml_const(c, t, 1, im, mm[MLT_MEMBER]));
        cond = cond == IR_NONE ? v : dec_bin(c, IR_BIN_ADD, cond, v);
    }
    if (cond == IR_NONE)
        cond = dec_bin_s(c, IR_BIN_MUL, xf, 0.0);
    if (anymiss) {                                 /* NaN goes to the true branch there */
        ValId nan = dec_cast(c, dec_un(c, IR_UN_ISNAN, xf), IR_DT_F32);
        ValId m = dec_bin(c, IR_BIN_MUL, nan, ml_const(c, t, 1, im, miss));
        cond = dec_bin(c, IR_BIN_MAX, cond, m);
    }
    return cond;
}

/* The ensemble's scores [N, K] for X [N, F] (before base values and transforms). */
static ValId ml_scores(DecCtx *c, const MlForest *f, ValId x, bool average)
{
    MlFlat fl;
    bool walk;
    int depth;
    if (!ml_flatten(c, f, &fl, &walk, &depth))
        return walk ? dec_ml_walk(c, f, x, average, depth) : IR_NONE;
    const IrType *tx = dec_ty(c, x);
    int64_t t = f->ntrees, im = fl.imax, lm = fl.lmax, k = f->ntargets, nsamp = tx->dims[0];
    int64_t *feat = ir_scratch(c->g, (size_t)(t * im) * sizeof *feat);
    for (int64_t i = 0; i < t * im; i++) {
        feat[i] = fl.inode[i] >= 0 ? f->node[fl.inode[i]].feat : 0;
        if (feat[i] < 0 || feat[i] >= tx->dims[1]) {
            dec_err(c, "node %lld tests feature %lld of %lld", (long long)fl.inode[i],
                    (long long)feat[i], (long long)tx->dims[1]);
            return IR_NONE;
        }
    }
    int64_t fd[1] = {t * im}, x3[3] = {nsamp, t, im}, perm[3] = {1, 0, 2};
    ValId xf = dec_gather(c, dec_cast(c, x, IR_DT_F32), dec_const_i64(c->g, fd, 1, feat), 1);
    xf = dec_transpose(c, dec_reshape(c, xf, x3, 3), perm);          /* [T, N, I] */
    ValId cond = ml_conditions(c, f, &fl, xf);
    if (cond == IR_NONE)
        return IR_NONE;
    double *p = ir_scratch(c->g, (size_t)(t * im * lm) * sizeof *p);
    double *need = ir_scratch(c->g, (size_t)(t * lm) * sizeof *need);
    double *w = ir_scratch(c->g, (size_t)(t * lm * k) * sizeof *w);
    for (int64_t tr = 0; tr < t; tr++)
        for (int64_t l = 0; l < lm; l++) {
            int64_t leaf = fl.ileaf[tr * lm + l];
            need[tr * lm + l] = leaf < 0 ? -1 : 0;
            for (int64_t i = 0; i < im; i++) {
                int8_t d = fl.path[(tr * im + i) * lm + l];
                p[(tr * im + i) * lm + l] = d;
                need[tr * lm + l] += d > 0;
            }
            for (int64_t j = 0; j < k; j++)
                w[(tr * lm + l) * k + j] = leaf < 0 ? 0 : f->leafw[leaf * k + j];
        }
    ValId s = ir_matmul(c->g, cond, ml_const(c, t, im, lm, p), c->o);   /* [T, N, L] */
    ValId reach = dec_cast(c, dec_bin(c, IR_BIN_EQ, s, ml_const(c, t, 1, lm, need)), IR_DT_F32);
    ValId y = ir_matmul(c->g, reach, ml_const(c, t, lm, k, w), c->o);  /* [T, N, K] */
    int64_t ax = 0;
    y = dec_reduce(c, IR_RED_SUM, y, &ax, 1, false);
    return average ? dec_bin_s(c, IR_BIN_DIV, y, (double)t) : y;
}

/* Post transform (0 NONE, 1 SOFTMAX, 2 LOGISTIC; others refused) of scores y [N, K]. */
static ValId ml_post(DecCtx *c, ValId y, int64_t pt)
{
    if (pt == 0)
        return y;
    if (pt == 2)
        return dec_un(c, IR_UN_SIGMOID, y);
    if (pt == 1)
        return dec_softmax_last(c, y);
    dec_err(c, "unsupported: post_transform %lld (NONE, SOFTMAX and LOGISTIC only)",
            (long long)pt);
    return IR_NONE;
}

/* X as [N, F] (a vector is one sample), checked. */
static ValId ml_input(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return IR_NONE;
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    if (t->rank == 1)
        return dec_reshape(c, x, (int64_t[]){1, t->dims[0]}, 2);
    if (t->rank != 2) {
        dec_err(c, "X must be [N, F] (got rank %d)", t->rank);
        return IR_NONE;
    }
    return x;
}

/* TreeEnsemble (ai.onnx.ml 5): nodes and leaves indexed directly, children marked as
 * leaves by nodes_trueleafs / nodes_falseleafs, MEMBER sets NaN-separated. */
bool dec_ml_tree_ensemble(DecCtx *c)
{
    ValId x = ml_input(c);
    if (x == IR_NONE)
        return false;
    const int64_t *feat, *tc, *fc, *tl, *fl, *roots, *tgt, *modes, *miss = NULL;
    const double *thr, *lw, *sets = NULL;
    int64_t n = ml_ints(c, "nodes_featureids", &feat), nl = ml_floats(c, "leaf_weights", &lw);
    int64_t nm = ml_ints(c, "nodes_modes", &modes), ns = ml_floats(c, "nodes_splits", &thr);
    int64_t nmiss = ml_ints(c, "nodes_missing_value_tracks_true", &miss);
    int64_t nsets = ml_floats(c, "membership_values", &sets);
    int64_t ntr = dec_aints(c, "tree_roots", &roots), k = dec_ai(c, "n_targets", 1);
    if (n < 1 || nm != n || ns != n || dec_aints(c, "nodes_truenodeids", &tc) != n ||
        dec_aints(c, "nodes_falsenodeids", &fc) != n || dec_aints(c, "nodes_trueleafs", &tl) != n ||
        dec_aints(c, "nodes_falseleafs", &fl) != n || ntr < 1 || nl < 1 ||
        dec_aints(c, "leaf_targetids", &tgt) != nl || k < 1 || (nmiss >= 0 && nmiss != n)) {
        dec_err(c, "inconsistent node, leaf or tree attributes");
        return false;
    }
    MlForest f = {n, nl, ntr, k, ir_scratch(c->g, (size_t)n * sizeof(MlNode)),
                  ir_scratch(c->g, (size_t)ntr * sizeof(int64_t)),
                  ir_scratch(c->g, (size_t)(nl * k) * sizeof(double)), sets};
    int64_t setpos = 0;
    for (int64_t i = 0; i < n; i++) {
        MlNode *nd = &f.node[i];
        *nd = (MlNode){feat[i], tc[i], fc[i], 0, 0, thr[i], (int)modes[i], tl[i] != 0,
                       fl[i] != 0, nmiss > 0 && miss[i] != 0};
        if (modes[i] < 0 || modes[i] > MLT_MEMBER) {
            dec_err(c, "node %lld: unknown mode %lld", (long long)i, (long long)modes[i]);
            return false;
        }
        if (modes[i] == MLT_MEMBER) {
            nd->set0 = setpos;
            while (setpos < nsets && !isnan(sets[setpos]))
                setpos++;
            nd->nset = setpos - nd->set0;
            setpos++;                              /* the NaN that ends the set */
        }
    }
    for (int64_t t = 0; t < ntr; t++) {
        if (roots[t] < 0 || roots[t] >= n) {
            dec_err(c, "tree %lld: root %lld is not a node", (long long)t, (long long)roots[t]);
            return false;
        }
        f.root[t] = roots[t];
    }
    memset(f.leafw, 0, (size_t)(nl * k) * sizeof(double));
    for (int64_t l = 0; l < nl; l++) {
        if (tgt[l] < 0 || tgt[l] >= k) {
            dec_err(c, "leaf %lld: target %lld of %lld", (long long)l, (long long)tgt[l],
                    (long long)k);
            return false;
        }
        f.leafw[l * k + tgt[l]] += lw[l];
    }
    int64_t agg = dec_ai(c, "aggregate_function", 1);
    if (agg != 0 && agg != 1) {
        dec_err(c, "unsupported: aggregate_function %lld (AVERAGE and SUM only)", (long long)agg);
        return false;
    }
    ValId y = ml_scores(c, &f, x, agg == 0);
    y = y == IR_NONE ? IR_NONE : ml_post(c, y, dec_ai(c, "post_transform", 0));
    c->out[0] = y == IR_NONE ? IR_NONE : dec_cast(c, y, dec_ty(c, dec_in(c, 0))->dtype);
    return y != IR_NONE;
}

/* The legacy node arrays' (tree, node id) keys, sorted, for ml_find's binary search
 * (a forest of 100 default trees has over 10^5 nodes: a linear search per child took
 * seconds). */
typedef struct {
    int64_t tree, id, index;
} MlKey;

static int ml_key_cmp(const void *a, const void *b)
{
    const MlKey *x = a, *y = b;
    if (x->tree != y->tree)
        return x->tree < y->tree ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static MlKey *ml_keys(DecCtx *c, const int64_t *trees, const int64_t *ids, int64_t n)
{
    MlKey *k = ir_scratch(c->g, (size_t)n * sizeof *k);
    for (int64_t i = 0; i < n; i++)
        k[i] = (MlKey){trees[i], ids[i], i};
    qsort(k, (size_t)n, sizeof *k, ml_key_cmp);
    return k;
}

/* Index of (tree, node id) among the n legacy nodes (keys sorted by ml_keys), or -1. */
static int64_t ml_find(const MlKey *keys, int64_t n, int64_t t, int64_t id)
{
    MlKey want = {t, id, 0};
    const MlKey *k = bsearch(&want, keys, (size_t)n, sizeof *keys, ml_key_cmp);
    return k ? k->index : -1;
}

/* Mode of a legacy nodes_modes string (MLT_*), or -1. */
static int ml_mode(const char *s)
{
    static const char *const names[] = {"BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT",
                                        "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER", "LEAF"};
    for (int m = 0; m <= MLT_LEAF; m++)
        if (!strcmp(s, names[m]))
            return m == MLT_MEMBER ? -1 : m;
    return -1;
}

/* The forest of a legacy TreeEnsembleRegressor / Classifier into *f: nodes numbered
 * per tree (nodes_treeids, nodes_nodeids; children by id), LEAF nodes carrying weights
 * per target or class in the wp_* arrays (wp "target" or "class": wp_treeids,
 * wp_nodeids, wp_ids, wp_weights), string modes; k targets or classes. */
static bool ml_legacy_forest(DecCtx *c, const char *wp, int64_t k, MlForest *f)
{
    const IrAttr *ma = ir_attr_find(c->n, "nodes_modes");
    const int64_t *trees, *ids, *feat, *tc, *fc, *miss = NULL, *ttree, *tnode, *tid;
    const double *thr, *tw;
    char an[4][40];
    snprintf(an[0], sizeof an[0], "%s_treeids", wp);
    snprintf(an[1], sizeof an[1], "%s_nodeids", wp);
    snprintf(an[2], sizeof an[2], "%s_ids", wp);
    snprintf(an[3], sizeof an[3], "%s_weights", wp);
    int64_t n = dec_aints(c, "nodes_treeids", &trees);
    int64_t nmiss = dec_aints(c, "nodes_missing_value_tracks_true", &miss);
    int64_t nt = dec_aints(c, an[0], &ttree), nw = ml_floats(c, an[3], &tw);
    char ast[64];
    snprintf(ast, sizeof ast, "%s_as_tensor", an[3]);
    if (nw < 0)
        nw = ml_floats(c, ast, &tw);
    int64_t nthr = ml_floats(c, "nodes_values", &thr);
    if (nthr < 0)
        nthr = ml_floats(c, "nodes_values_as_tensor", &thr);
    if (n < 1 || !ma || ma->kind != IR_ATTR_STRINGS || (int64_t)ma->n != n ||
        dec_aints(c, "nodes_nodeids", &ids) != n || dec_aints(c, "nodes_featureids", &feat) != n ||
        dec_aints(c, "nodes_truenodeids", &tc) != n || dec_aints(c, "nodes_falsenodeids", &fc) != n ||
        nthr != n || nt < 1 || dec_aints(c, an[1], &tnode) != nt ||
        dec_aints(c, an[2], &tid) != nt || nw != nt || k < 1 || (nmiss >= 0 && nmiss != n)) {
        dec_err(c, "inconsistent node or %s attributes", wp);
        return false;
    }
    int64_t ntr = 0;
    for (int64_t i = 0; i < n; i++)
        ntr = trees[i] + 1 > ntr ? trees[i] + 1 : ntr;
    const MlKey *keys = ml_keys(c, trees, ids, n);
    *f = (MlForest){n, n, ntr, k, ir_scratch(c->g, (size_t)n * sizeof(MlNode)),
                    ir_scratch(c->g, (size_t)ntr * sizeof(int64_t)),
                    ir_scratch(c->g, (size_t)(n * k) * sizeof(double)), NULL};
    memset(f->leafw, 0, (size_t)(n * k) * sizeof(double));
    for (int64_t t = 0; t < ntr; t++)
        f->root[t] = INT64_MIN;
    for (int64_t i = 0; i < n; i++) {            /* a leaf node is leaf i, children by id */
        int mode = ml_mode(ma->strings[i]);
        if (mode < 0 || trees[i] < 0) {
            dec_err(c, "node %lld: unsupported mode '%s'", (long long)i, ma->strings[i]);
            return false;
        }
        int64_t ti = ml_find(keys, n, trees[i], tc[i]), fi = ml_find(keys, n, trees[i], fc[i]);
        if (mode != MLT_LEAF && (ti < 0 || fi < 0)) {
            dec_err(c, "node %lld: a child id not in its tree", (long long)i);
            return false;
        }
        bool tlf = mode != MLT_LEAF && !strcmp(ma->strings[ti], "LEAF");
        bool flf = mode != MLT_LEAF && !strcmp(ma->strings[fi], "LEAF");
        f->node[i] = (MlNode){feat[i], ti, fi, 0, 0, thr[i], mode, tlf, flf,
                              nmiss > 0 && miss[i] != 0};
        if (f->root[trees[i]] == INT64_MIN || ids[i] == 0)
            f->root[trees[i]] = mode == MLT_LEAF ? -1 - i : i;
    }
    for (int64_t t = 0; t < ntr; t++)
        if (f->root[t] == INT64_MIN) {
            dec_err(c, "tree %lld has no nodes", (long long)t);
            return false;
        }
    for (int64_t j = 0; j < nt; j++) {
        int64_t i = ml_find(keys, n, ttree[j], tnode[j]);
        if (i < 0 || tid[j] < 0 || tid[j] >= k || strcmp(ma->strings[i], "LEAF")) {
            dec_err(c, "%s weight %lld: not on a leaf of its tree, or id out of range", wp,
                    (long long)j);
            return false;
        }
        f->leafw[i * k + tid[j]] += tw[j];
    }
    return true;
}

/* The base_values (or base_values_as_tensor) attribute: count (-1 absent), values. */
static int64_t ml_base(DecCtx *c, const double **base)
{
    int64_t n = ml_floats(c, "base_values", base);
    return n >= 0 ? n : ml_floats(c, "base_values_as_tensor", base);
}

/* TreeEnsembleRegressor (ai.onnx.ml 1 and 3). */
bool dec_ml_tree_regressor(DecCtx *c)
{
    ValId x = ml_input(c);
    MlForest f;
    if (x == IR_NONE || !ml_legacy_forest(c, "target", dec_ai(c, "n_targets", 1), &f))
        return false;
    const double *base = NULL;
    int64_t nbase = ml_base(c, &base);
    if (nbase >= 0 && nbase != f.ntargets) {
        dec_err(c, "base_values holds %lld values for %lld targets", (long long)nbase,
                (long long)f.ntargets);
        return false;
    }
    const char *agg = dec_as(c, "aggregate_function", "SUM");
    if (strcmp(agg, "SUM") && strcmp(agg, "AVERAGE")) {
        dec_err(c, "unsupported: aggregate_function %s (SUM and AVERAGE only)", agg);
        return false;
    }
    ValId y = ml_scores(c, &f, x, !strcmp(agg, "AVERAGE"));
    if (y != IR_NONE && nbase > 0)
        y = dec_bin(c, IR_BIN_ADD, y, ml_const(c, 0, 1, f.ntargets, base));
    c->out[0] = y == IR_NONE ? IR_NONE : ml_post(c, y, dec_ml_post_code(c));
    return c->out[0] != IR_NONE;
}

/* TreeEnsembleClassifier (ai.onnx.ml 1 and 3): class scores summed over the trees, then
 * the label and scores outputs as onnxruntime writes them (dec_ml_classify). */
bool dec_ml_tree_classifier(DecCtx *c)
{
    ValId x = ml_input(c), labels = dec_ml_labels(c);
    if (x == IR_NONE || labels == IR_NONE)
        return false;
    int64_t nc = dec_numel(dec_ty(c, labels));
    MlForest f;
    if (!ml_legacy_forest(c, "class", nc, &f))
        return false;
    const int64_t *cid;
    const double *w, *base = NULL;
    int64_t nw = dec_aints(c, "class_ids", &cid), nbase = ml_base(c, &base);
    if (ml_floats(c, "class_weights", &w) < 0)
        ml_floats(c, "class_weights_as_tensor", &w);
    bool used[2] = {false, false}, pos = true;
    for (int64_t j = 0; j < nw; j++) {
        if (cid[j] < 2)
            used[cid[j]] = true;
        pos &= w[j] >= 0;
    }
    bool binary = nc == 2 && used[0] != used[1];
    ValId s = ml_scores(c, &f, x, false);
    return s != IR_NONE &&
           dec_ml_classify(c, s, labels, binary ? (used[0] ? 0 : 1) : -1, pos, true, base, nbase);
}
