/* onnx_ml.c: the elementwise and linear operators of the ai.onnx.ml domain (classical
 * machine learning, as skl2onnx writes a preprocessing pipeline) as core ops:
 *   Binarizer {threshold}          x > threshold ? 1 : 0, in x's type
 *   ArrayFeatureExtractor(X, Y)    X's last axis gathered at the indices Y (a vector X
 *                                  gives one row)
 *   Scaler {offset, scale}         (x - offset) * scale per feature (or one for all),
 *                                  as float
 *   Normalizer {norm}              each row over its max (MAX), sum of |x| (L1) or
 *                                  Euclidean norm (L2), as float
 *   LinearRegressor {coefficients, intercepts, targets, post_transform NONE}
 *                                  x @ coefficients^T + intercepts
 *   LinearClassifier {coefficients, intercepts, classlabels_int64s, post_transform}
 *                                  class scores x @ coefficients^T + intercepts (one row
 *                                  per class), label and scores (onnx_ml_class.c)
 *   Imputer {imputed_value_floats | _int64s, replaced_value_float | _int64}
 *                                  the replaced value (NaN: any NaN) set to the imputed
 *                                  one, per feature or for all
 *   OneHotEncoder {cats_int64s, zeros}
 *                                  [..., C] indicators of x == each category, as float
 *   FeatureVectorizer {inputdimensions}
 *                                  the inputs' features side by side, as float
 *   SVMRegressor {kernel_type, kernel_params, support_vectors, coefficients, rho,
 *                 n_supports, one_class}
 *                                  sum_i coefficients_i K(sv_i, x) + rho (LINEAR, POLY,
 *                                  RBF or SIGMOID kernel; RBF from the differences, not
 *                                  the expanded dot products), +-1 with one_class
 *   SVMClassifier {the same, vectors_per_class, classlabels_ints}
 *                                  one-vs-one: per class pair the kernel sums of both
 *                                  classes' support vectors with their coefficients plus
 *                                  rho (one matrix product over the kernel row), a vote
 *                                  for the first class when positive; the label of the
 *                                  most votes (first on ties), the pair scores as scores
 *                                  ([-s, s] for two classes), as onnxruntime; probability
 *                                  estimates (prob_a, prob_b) and the linear form are
 *                                  refused
 *   ZipMap                         refused with what to do instead (its output is a
 *                                  sequence of maps)
 * Tree ensembles are in onnx_ml_tree.c, classifiers' outputs in onnx_ml_class.c.
 */
#include <math.h>
#include <string.h>

#include "onnx.h"

bool dec_ml_binarizer(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0);
    ValId gt = dec_bin_s(c, IR_BIN_GT, x, dec_af(c, "threshold", 0.0));
    c->out[0] = dec_cast(c, gt, dec_ty(c, x)->dtype);
    return true;
}

bool dec_ml_feature_extractor(DecCtx *c)
{
    if (!dec_need_in(c, 0) || !dec_need_in(c, 1))
        return false;
    ValId x = dec_in(c, 0), y = dec_in(c, 1);
    const IrType *tx = dec_ty(c, x);
    if (tx->rank < 1) {
        dec_err(c, "X must have rank >= 1");
        return false;
    }
    if (tx->rank == 1)
        x = dec_reshape(c, x, (int64_t[]){1, tx->dims[0]}, 2);
    int64_t n = dec_numel(dec_ty(c, y));
    ValId idx = dec_reshape(c, y, &n, 1);
    c->out[0] = dec_gather(c, x, idx, dec_ty(c, x)->rank - 1);
    return true;
}

/* A float list attribute as a constant: one value broadcasts, several lie along the
 * last axis (features). dflt when the attribute is absent. */
static ValId ml_row(DecCtx *c, const char *name, double dflt)
{
    const IrAttr *a = ir_attr_find(c->n, name);
    if (!a || a->kind != IR_ATTR_FLOATS || a->n == 0)
        return dec_scalar(c->g, IR_DT_F32, dflt);
    if (a->n == 1)
        return dec_scalar(c->g, IR_DT_F32, a->floats[0]);
    int64_t d = a->n;
    return dec_const(c->g, IR_DT_F32, &d, 1, a->floats);
}

bool dec_ml_scaler(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_cast(c, dec_in(c, 0), IR_DT_F32);
    x = dec_bin(c, IR_BIN_SUB, x, ml_row(c, "offset", 0.0));
    c->out[0] = dec_bin(c, IR_BIN_MUL, x, ml_row(c, "scale", 1.0));
    return true;
}

bool dec_ml_normalizer(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_cast(c, dec_in(c, 0), IR_DT_F32);
    int64_t ax = dec_ty(c, x)->rank - 1;
    const char *norm = dec_as(c, "norm", "MAX");
    ValId d;
    if (!strcmp(norm, "MAX")) {
        d = dec_reduce(c, IR_RED_MAX, x, &ax, 1, true);
    } else if (!strcmp(norm, "L1")) {
        d = dec_reduce(c, IR_RED_SUM, dec_un(c, IR_UN_ABS, x), &ax, 1, true);
    } else if (!strcmp(norm, "L2")) {
        d = dec_un(c, IR_UN_SQRT, dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, x, x), &ax,
                                             1, true));
    } else {
        dec_err(c, "unknown norm '%s' (MAX, L1 or L2)", norm);
        return false;
    }
    c->out[0] = dec_bin(c, IR_BIN_DIV, x, d);
    return true;
}

/* Input 0 as float rows [N, F] (a vector is one row); IR_NONE (reported) for another
 * rank. */
static ValId ml_rows(DecCtx *c)
{
    ValId x = dec_cast(c, dec_in(c, 0), IR_DT_F32);
    const IrType *tx = dec_ty(c, x);
    if (tx->rank != 1 && tx->rank != 2) {
        dec_err(c, "X must be [N, F] or [F] (got rank %d)", tx->rank);
        return IR_NONE;
    }
    return tx->rank == 1 ? dec_reshape(c, x, (int64_t[]){1, tx->dims[0]}, 2) : x;
}

/* A classifier's input 0 present and its labels (IR_NONE, reported, otherwise). */
static ValId ml_labels_in(DecCtx *c)
{
    return dec_need_in(c, 0) ? dec_ml_labels(c) : IR_NONE;
}

/* x [N, F] (a vector: one row) @ coefficients^T [F, k] + intercepts, as float. */
static ValId ml_linear(DecCtx *c, int64_t k)
{
    ValId x = ml_rows(c);
    const IrAttr *co = ir_attr_find(c->n, "coefficients");
    if (x == IR_NONE)
        return IR_NONE;
    int64_t f = dec_ty(c, x)->dims[1];
    if (!co || co->kind != IR_ATTR_FLOATS || k < 1 || (int64_t)co->n != k * f) {
        dec_err(c, "coefficients must hold %lld x %lld values (outputs x features)",
                (long long)k, (long long)f);
        return IR_NONE;
    }
    int64_t d2[2] = {k, f}, p[2] = {1, 0};
    ValId w = dec_transpose(c, dec_const(c->g, IR_DT_F32, d2, 2, co->floats), p);
    return dec_bin(c, IR_BIN_ADD, ir_matmul(c->g, x, w, c->o), ml_row(c, "intercepts", 0.0));
}

bool dec_ml_linear_regressor(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    if (strcmp(dec_as(c, "post_transform", "NONE"), "NONE")) {
        dec_err(c, "unsupported: post_transform other than NONE");
        return false;
    }
    c->out[0] = ml_linear(c, dec_ai(c, "targets", 1));
    return c->out[0] != IR_NONE;
}

bool dec_ml_linear_classifier(DecCtx *c)
{
    ValId labels = ml_labels_in(c);
    if (labels == IR_NONE)
        return false;
    int64_t nc = dec_numel(dec_ty(c, labels));
    const IrAttr *ic = ir_attr_find(c->n, "intercepts");
    if (ic && ic->kind == IR_ATTR_FLOATS && (int64_t)ic->n != nc) {
        dec_err(c, "unsupported: %u score rows for %lld class labels (one per class only)",
                ic->n, (long long)nc);
        return false;
    }
    ValId s = ml_linear(c, nc);
    return s != IR_NONE && dec_ml_classify(c, s, labels, -1, false, false, NULL, -1);
}

bool dec_ml_imputer(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = dec_in(c, 0), imp;
    bool fl = ir_dtype_is_float(dec_ty(c, x)->dtype);
    const IrAttr *a = ir_attr_find(c->n, fl ? "imputed_value_floats" : "imputed_value_int64s");
    if (!a || a->n == 0) {
        dec_err(c, "missing %s", fl ? "imputed_value_floats" : "imputed_value_int64s");
        return false;
    }
    int64_t d = a->n;
    if (fl) {
        imp = a->n == 1 ? dec_scalar(c->g, IR_DT_F32, a->floats[0])
                        : dec_const(c->g, IR_DT_F32, &d, 1, a->floats);
    } else {
        imp = a->n == 1 ? dec_scalar(c->g, IR_DT_I64, (double)a->ints[0])
                        : dec_const_i64(c->g, &d, 1, a->ints);
    }
    imp = dec_cast(c, imp, dec_ty(c, x)->dtype);
    ValId hit;
    double rv = fl ? dec_af(c, "replaced_value_float", 0.0) : (double)dec_ai(c, "replaced_value_int64", 0);
    if (fl && isnan(rv))
        hit = dec_un(c, IR_UN_ISNAN, x);
    else
        hit = dec_bin_s(c, IR_BIN_EQ, x, rv);
    c->out[0] = dec_select(c, hit, imp, x);
    return true;
}

bool dec_ml_one_hot(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    const int64_t *cats;
    int n = dec_aints(c, "cats_int64s", &cats);
    if (n < 1) {
        dec_err(c, "unsupported: %s (cats_int64s only)",
                dec_has_attr(c, "cats_strings") ? "string categories" : "no categories");
        return false;
    }
    ValId x = dec_in(c, 0);
    const IrType *t = dec_ty(c, x);
    int64_t d[IR_MAX_RANK + 1];
    for (int i = 0; i < t->rank; i++)
        d[i] = t->dims[i];
    d[t->rank] = 1;
    int64_t cd = n;
    ValId xe = dec_cast(c, dec_reshape(c, x, d, t->rank + 1), IR_DT_I64);
    ValId eq = dec_bin(c, IR_BIN_EQ, xe, dec_const_i64(c->g, &cd, 1, cats));
    c->out[0] = dec_cast(c, eq, IR_DT_F32);
    return true;
}

bool dec_ml_feature_vectorizer(DecCtx *c)
{
    const int64_t *dims;
    int nd = dec_aints(c, "inputdimensions", &dims);
    if (c->n->nin < 1 || nd != c->n->nin) {
        dec_err(c, "inputdimensions must give one size per input (%d inputs)", c->n->nin);
        return false;
    }
    ValId *xs = ir_alloc(c->g, (size_t)nd * sizeof *xs);
    int64_t rows = -1;
    for (int i = 0; i < nd; i++) {
        if (!dec_need_in(c, i))
            return false;
        ValId x = dec_cast(c, dec_in(c, i), IR_DT_F32);
        const IrType *t = dec_ty(c, x);
        int64_t r = t->rank >= 2 ? t->dims[0] : 1, f = dec_numel(t) / (r ? r : 1);
        if (rows >= 0 && r != rows) {
            dec_err(c, "inputs hold %lld and %lld rows", (long long)rows, (long long)r);
            return false;
        }
        rows = r;
        int64_t d2[2] = {r, f};
        x = dec_reshape(c, x, d2, 2);
        if (f > dims[i])                           /* extra features dropped */
            x = dec_slice_axis(c, x, 1, 0, 1, dims[i]);
        else if (f < dims[i]) {                    /* missing ones are zero */
            int64_t pads[4] = {0, 0, 0, dims[i] - f};
            x = dec_pad(c, x, pads, NULL, 0.0);
        }
        xs[i] = x;
    }
    c->out[0] = dec_concat(c, xs, nd, 1);
    return true;
}

bool dec_ml_zipmap(DecCtx *c)
{
    dec_err(c, "unsupported: ZipMap (its output is a sequence of maps, which the card has no "
            "type for); convert the classifier without it (skl2onnx: options={id(model): "
            "{'zipmap': False}}) and read its probabilities tensor");
    return false;
}

/* The kernel K(x, sv) [N, S] of x [N, F] and the support vectors sv [S, F]. */
static ValId svm_kernel(DecCtx *c, ValId x, ValId sv, const char *kt, const double *kp, int nkp)
{
    double gamma = nkp > 0 ? kp[0] : 0.0, coef0 = nkp > 1 ? kp[1] : 0.0;
    double degree = nkp > 2 ? kp[2] : 3.0;
    if (!strcmp(kt, "RBF")) {
        const IrType *tx = dec_ty(c, x), *ts = dec_ty(c, sv);
        int64_t x3[3] = {tx->dims[0], 1, tx->dims[1]}, s3[3] = {1, ts->dims[0], ts->dims[1]}, ax = 2;
        ValId d = dec_bin(c, IR_BIN_SUB, dec_reshape(c, x, x3, 3), dec_reshape(c, sv, s3, 3));
        ValId d2 = dec_reduce(c, IR_RED_SUM, dec_bin(c, IR_BIN_MUL, d, d), &ax, 1, false);
        return dec_un(c, IR_UN_EXP, dec_bin_s(c, IR_BIN_MUL, d2, -gamma));
    }
    int64_t p[2] = {1, 0};
    ValId dot = ir_matmul(c->g, x, dec_transpose(c, sv, p), c->o);
    if (!strcmp(kt, "LINEAR"))
        return dot;
    ValId v = dec_bin_s(c, IR_BIN_ADD, dec_bin_s(c, IR_BIN_MUL, dot, gamma), coef0);
    if (!strcmp(kt, "POLY"))
        return dec_bin_s(c, IR_BIN_POW, v, degree);
    if (!strcmp(kt, "SIGMOID"))
        return dec_un(c, IR_UN_TANH, v);
    dec_err(c, "unknown kernel_type '%s' (LINEAR, POLY, RBF, SIGMOID)", kt);
    return IR_NONE;
}

/* The node's kernel (kernel_type, kernel_params) of x [N, F] with its nv support
 * vectors sv [nv * F]. */
static ValId svm_node_kernel(DecCtx *c, ValId x, const double *sv, int64_t nv)
{
    const IrAttr *kp = ir_attr_find(c->n, "kernel_params");
    bool fl = kp && kp->kind == IR_ATTR_FLOATS;
    int64_t d2[2] = {nv, dec_ty(c, x)->dims[1]};
    return svm_kernel(c, x, dec_const(c->g, IR_DT_F32, d2, 2, sv), dec_as(c, "kernel_type", "LINEAR"),
                      fl ? kp->floats : NULL, fl ? (int)kp->n : 0);
}

bool dec_ml_svm_regressor(DecCtx *c)
{
    if (!dec_need_in(c, 0))
        return false;
    ValId x = ml_rows(c);
    if (x == IR_NONE)
        return false;
    int64_t f = dec_ty(c, x)->dims[1], ns = dec_ai(c, "n_supports", 0);
    const IrAttr *sv = ir_attr_find(c->n, "support_vectors"), *co = ir_attr_find(c->n, "coefficients");
    const IrAttr *rho = ir_attr_find(c->n, "rho");
    if (strcmp(dec_as(c, "post_transform", "NONE"), "NONE") || ns < 1 || !sv || !co ||
        sv->kind != IR_ATTR_FLOATS || co->kind != IR_ATTR_FLOATS || (int64_t)sv->n != ns * f ||
        (int64_t)co->n != ns) {
        dec_err(c, "needs n_supports support vectors of %lld features and one coefficient each "
                "(post_transform NONE)", (long long)f);
        return false;
    }
    int64_t dc[2] = {ns, 1};
    ValId k = svm_node_kernel(c, x, sv->floats, ns);
    if (k == IR_NONE)
        return false;
    ValId y = ir_matmul(c->g, k, dec_const(c->g, IR_DT_F32, dc, 2, co->floats), c->o);
    if (rho && rho->kind == IR_ATTR_FLOATS && rho->n > 0)
        y = dec_bin_s(c, IR_BIN_ADD, y, rho->floats[0]);
    if (dec_ai(c, "one_class", 0))
        y = dec_select(c, dec_bin_s(c, IR_BIN_GT, y, 0.0), dec_scalar(c->g, IR_DT_F32, 1.0),
                       dec_scalar(c->g, IR_DT_F32, -1.0));
    c->out[0] = y;
    return true;
}

bool dec_ml_svm_classifier(DecCtx *c)
{
    ValId labels = ml_labels_in(c);
    if (labels == IR_NONE)
        return false;
    const IrAttr *sv = ir_attr_find(c->n, "support_vectors"), *co = ir_attr_find(c->n, "coefficients");
    const IrAttr *rho = ir_attr_find(c->n, "rho");
    const int64_t *vpc;
    int64_t nc = dec_numel(dec_ty(c, labels)), ncl = dec_aints(c, "vectors_per_class", &vpc);
    if (dec_ml_post_code(c) != 0) {
        dec_err(c, "unsupported: post_transform other than NONE");
        return false;
    }
    if (dec_has_attr(c, "prob_a") || ncl < 1 || !sv) {
        dec_err(c, "unsupported: %s", dec_has_attr(c, "prob_a") ? "probability estimates "
                "(prob_a, prob_b)" : "the linear SVMClassifier (no support vectors)");
        return false;
    }
    ValId x = ml_rows(c);
    if (x == IR_NONE)
        return false;
    int64_t f = dec_ty(c, x)->dims[1], nv = 0, np = nc * (nc - 1) / 2;
    for (int64_t i = 0; i < ncl; i++)
        nv += vpc[i] >= 0 ? vpc[i] : -(1 << 30);     /* a negative count: refused below */
    if (ncl != nc || nc < 2 || nv < 1 || sv->kind != IR_ATTR_FLOATS || (int64_t)sv->n != nv * f ||
        !co || co->kind != IR_ATTR_FLOATS || (int64_t)co->n != (nc - 1) * nv || !rho ||
        rho->kind != IR_ATTR_FLOATS || (int64_t)rho->n != np) {
        dec_err(c, "inconsistent support vectors, coefficients, rho or vectors_per_class");
        return false;
    }
    ValId k = svm_node_kernel(c, x, sv->floats, nv);
    if (k == IR_NONE)
        return false;
    double *w = ir_scratch(c->g, (size_t)(nv * np) * sizeof *w);   /* [V, P] */
    double *v1 = ir_scratch(c->g, (size_t)(np * nc) * sizeof *v1), *v2 = ir_scratch(c->g, (size_t)(np * nc) * sizeof *v2);
    memset(w, 0, (size_t)(nv * np) * sizeof *w);
    memset(v1, 0, (size_t)(np * nc) * sizeof *v1);
    memset(v2, 0, (size_t)(np * nc) * sizeof *v2);
    int64_t *start = ir_scratch(c->g, (size_t)(nc + 1) * sizeof *start), p = 0;
    start[0] = 0;
    for (int64_t i = 0; i < nc; i++)
        start[i + 1] = start[i] + vpc[i];
    for (int64_t i = 0; i < nc - 1; i++)
        for (int64_t j = i + 1; j < nc; j++, p++) {
            for (int64_t m = start[i]; m < start[i + 1]; m++)
                w[m * np + p] = co->floats[(j - 1) * nv + m];
            for (int64_t m = start[j]; m < start[j + 1]; m++)
                w[m * np + p] = co->floats[i * nv + m];
            v1[p * nc + i] = 1;
            v2[p * nc + j] = 1;
        }
    int64_t dw[2] = {nv, np}, dv[2] = {np, nc};
    ValId sc = ir_matmul(c->g, k, dec_const(c->g, IR_DT_F32, dw, 2, w), c->o);
    sc = dec_bin(c, IR_BIN_ADD, sc, dec_const(c->g, IR_DT_F32, &np, 1, rho->floats));
    ValId pos = dec_cast(c, dec_bin_s(c, IR_BIN_GT, sc, 0.0), IR_DT_F32);
    ValId neg = dec_bin(c, IR_BIN_SUB, dec_scalar(c->g, IR_DT_F32, 1.0), pos);
    ValId votes = dec_bin(c, IR_BIN_ADD, ir_matmul(c->g, pos, dec_const(c->g, IR_DT_F32, dv, 2, v1), c->o),
                          ir_matmul(c->g, neg, dec_const(c->g, IR_DT_F32, dv, 2, v2), c->o));
    IrAttr a[4] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                   ir_attr_int("keepdims", 0), ir_attr_int("select_last", 0)};
    c->out[0] = dec_gather(c, labels, dec_op(c, IR_OP_ARGREDUCE, &votes, 1, a, 4), 0);
    if (np == 1) {
        ValId parts[2] = {dec_un(c, IR_UN_NEG, sc), sc};
        c->out[1] = dec_concat(c, parts, 2, 1);
    } else {
        c->out[1] = sc;
    }
    return true;
}
