/* onnx_ml_class.c: the label and scores outputs of the ai.onnx.ml classifiers
 * (TreeEnsembleClassifier, LinearClassifier) from their class scores, as onnxruntime
 * writes them, so that a model converted by skl2onnx or onnxmltools gives the same
 * labels and probabilities:
 *   - one score column for two classes (a binary tree ensemble whose weights are all for
 *     class 0, as skl2onnx writes forests and boosting): with weights all >= 0 the
 *     label is class 1 when s > 0.5 and the scores [1 - s, s] (the transform is not
 *     applied); otherwise class 1 when s > 0, scores [sigmoid(-s), sigmoid(s)] with
 *     LOGISTIC, else [-s, s];
 *   - two classes both scored, tree ensemble: class 1 when s1 > 0; then the transform;
 *   - otherwise the first class of the highest score (argmax of the raw scores, which
 *     the transforms keep), and the transform (NONE, SOFTMAX or LOGISTIC) of the
 *     scores, base values added first.
 * Labels are classlabels_int64s (classlabels_ints for LinearClassifier); string labels
 * are refused (the card has no strings).
 */
#include <string.h>

#include "onnx.h"

/* post_transform as a number (0 NONE, 1 SOFTMAX, 2 LOGISTIC, 3 SOFTMAX_ZERO, 4 PROBIT). */
int64_t dec_ml_post_code(DecCtx *c)
{
    static const char *const names[] = {"NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"};
    const char *pt = dec_as(c, "post_transform", "NONE");
    for (int i = 0; i < 5; i++)
        if (!strcmp(pt, names[i]))
            return i;
    return 9;
}

ValId dec_ml_labels(DecCtx *c)
{
    const int64_t *v;
    int n = dec_aints(c, "classlabels_int64s", &v);
    if (n < 1)
        n = dec_aints(c, "classlabels_ints", &v);      /* LinearClassifier's name */
    if (n < 1) {
        dec_err(c, "unsupported: %s (integer class labels only)",
                dec_has_attr(c, "classlabels_strings") ? "string class labels"
                                                       : "no class labels");
        return IR_NONE;
    }
    int64_t d = n;
    return dec_const_i64(c->g, &d, 1, v);
}

/* Column j of s [N, C] as [N, 1]. */
static ValId column(DecCtx *c, ValId s, int64_t j)
{
    return dec_slice_axis(c, s, 1, j, 1, 1);
}

/* labels[1] where pick1 [N, 1] holds, else labels[0], as [N]. */
static ValId pick_label(DecCtx *c, ValId labels, ValId pick1)
{
    int64_t n = dec_ty(c, pick1)->dims[0];
    ValId l0 = dec_slice_axis(c, labels, 0, 0, 1, 1), l1 = dec_slice_axis(c, labels, 0, 1, 1, 1);
    return dec_select(c, dec_reshape(c, pick1, &n, 1), l1, l0);
}

/* Binary scores of the single column s [N, 1] (see the file comment). */
static void binary_outputs(DecCtx *c, ValId s, ValId labels, bool pos, int64_t post)
{
    ValId p0, p1, one = dec_scalar(c->g, IR_DT_F32, 1.0);
    if (pos) {
        p1 = s;
        p0 = dec_bin(c, IR_BIN_SUB, one, s);
    } else if (post == 2) {
        p1 = dec_un(c, IR_UN_SIGMOID, s);
        p0 = dec_un(c, IR_UN_SIGMOID, dec_un(c, IR_UN_NEG, s));
    } else {
        p1 = s;
        p0 = dec_un(c, IR_UN_NEG, s);
    }
    ValId parts[2] = {p0, p1};
    c->out[0] = pick_label(c, labels, dec_bin_s(c, IR_BIN_GT, s, pos ? 0.5 : 0.0));
    c->out[1] = dec_concat(c, parts, 2, 1);
}

bool dec_ml_classify(DecCtx *c, ValId s, ValId labels, int bin, bool pos, bool tree,
                     const double *base, int64_t nbase)
{
    int64_t nc = dec_numel(dec_ty(c, labels)), post = dec_ml_post_code(c);
    if (post > 2) {
        dec_err(c, "unsupported: post_transform %s (NONE, SOFTMAX and LOGISTIC only)",
                dec_as(c, "post_transform", "?"));
        return false;
    }
    if (bin >= 0) {
        if (bin != 0 || nbase > 1) {
            dec_err(c, "unsupported: a binary ensemble scoring class 1 or with two base values");
            return false;
        }
        ValId s0 = column(c, s, 0);
        if (nbase == 1)
            s0 = dec_bin_s(c, IR_BIN_ADD, s0, base[0]);
        binary_outputs(c, s0, labels, pos, post);
        return true;
    }
    if (nbase > 0 && nbase != nc) {
        dec_err(c, "base_values holds %lld values for %lld classes", (long long)nbase,
                (long long)nc);
        return false;
    }
    if (nbase > 0) {
        int64_t d2[2] = {1, nc};
        s = dec_bin(c, IR_BIN_ADD, s, dec_const(c->g, IR_DT_F32, d2, 2, base));
    }
    if (nc == 2 && tree) {
        c->out[0] = pick_label(c, labels, dec_bin_s(c, IR_BIN_GT, column(c, s, 1), 0.0));
    } else {
        IrAttr a[4] = {ir_attr_int("fn", IR_RED_MAX), ir_attr_int("axis", 1),
                       ir_attr_int("keepdims", 0), ir_attr_int("select_last", 0)};
        ValId idx = dec_op(c, IR_OP_ARGREDUCE, &s, 1, a, 4);
        c->out[0] = dec_gather(c, labels, idx, 0);
    }
    c->out[1] = post == 0 ? s : post == 2 ? dec_un(c, IR_UN_SIGMOID, s) : dec_softmax_last(c, s);
    return true;
}
