/* onnx_matmul.c: ONNX contractions: Gemm and MatMul (one core MATMUL each, with
 * transposes, scaling and the bias of Gemm) and Einsum.
 *
 * Einsum is a chain of pairwise contractions. Each pair is brought to
 * [batch, free, contracted] x [batch, contracted, free] by TRANSPOSE and RESHAPE and
 * contracted with one batched MATMUL; labels used by one operand only are summed out
 * first. A label repeated inside one operand (a diagonal) is first reduced to one
 * axis: its axes go last, merge into one, and a GATHER with constant indices picks
 * the diagonal elements. */
#include <ctype.h>
#include <string.h>

#include "onnx.h"

/* Gemm: alpha * A' B' + beta * C with A' = transA ? A^T : A (likewise B). */
bool dec_gemm(DecCtx *c)
{
    ValId a = dec_in(c, 0), b = dec_in(c, 1), cc = dec_in(c, 2);
    if (a == IR_NONE || b == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    if (dec_ty(c, a)->rank != 2 || dec_ty(c, b)->rank != 2) {
        dec_err(c, "A and B must be 2-D (ranks %d and %d)", dec_ty(c, a)->rank, dec_ty(c, b)->rank);
        return false;
    }
    static const int64_t t2[2] = {1, 0};
    double alpha = dec_af(c, "alpha", 1.0), beta = dec_af(c, "beta", 1.0);
    ValId bias = beta == 1.0 && alpha == 1.0 ? cc : IR_NONE;  /* may join the int32 sum */
    ValId q = dec_ai(c, "transA", 0) ? IR_NONE : dec_qdq_matmul(c, a, b, dec_ai(c, "transB", 0), &bias);
    if (q != IR_NONE) {                    /* int8 product of dequantized operands */
        if (alpha != 1.0)
            q = dec_bin_s(c, IR_BIN_MUL, q, alpha);
        if (cc != IR_NONE && beta != 0.0 && (beta != 1.0 || bias != IR_NONE))
            q = dec_bin(c, IR_BIN_ADD, q, beta != 1.0 ? dec_bin_s(c, IR_BIN_MUL, cc, beta) : cc);
        c->out[0] = q;
        return true;
    }
    if (dec_ai(c, "transA", 0))
        a = dec_transpose(c, a, t2);
    if (dec_ai(c, "transB", 0))
        b = dec_transpose(c, b, t2);
    if (dec_ty(c, a)->dims[1] != dec_ty(c, b)->dims[0]) {
        dec_err(c, "inner dimensions differ (%lld and %lld)", (long long)dec_ty(c, a)->dims[1],
                (long long)dec_ty(c, b)->dims[0]);
        return false;
    }
    ValId y = ir_matmul(c->g, a, b, c->o);
    if (alpha != 1.0)
        y = dec_bin_s(c, IR_BIN_MUL, y, alpha);
    if (cc != IR_NONE && beta != 0.0) {
        if (beta != 1.0)
            cc = dec_bin_s(c, IR_BIN_MUL, cc, beta);
        y = dec_bin(c, IR_BIN_ADD, y, cc);
    }
    c->out[0] = y;
    return true;
}

/* MatMul with numpy semantics: 1-D operands are promoted and the added axis is
 * removed from the result; batch dims broadcast in the core MATMUL. */
bool dec_matmul(DecCtx *c)
{
    ValId a = dec_in(c, 0), b = dec_in(c, 1);
    if (a == IR_NONE || b == IR_NONE) {
        dec_err(c, "missing input");
        return false;
    }
    int ra = dec_ty(c, a)->rank, rb = dec_ty(c, b)->rank;
    if (ra < 1 || rb < 1) {
        dec_err(c, "operands must have rank >= 1");
        return false;
    }
    if (ra == 1)
        a = dec_reshape(c, a, (int64_t[]){1, dec_ty(c, a)->dims[0]}, 2);
    if (rb == 1)
        b = dec_reshape(c, b, (int64_t[]){dec_ty(c, b)->dims[0], 1}, 2);
    const IrType *ta = dec_ty(c, a), *tb = dec_ty(c, b);
    if (ta->dims[ta->rank - 1] != tb->dims[tb->rank - 2]) {
        dec_err(c, "inner dimensions differ (%lld and %lld)", (long long)ta->dims[ta->rank - 1],
                (long long)tb->dims[tb->rank - 2]);
        return false;
    }
    ValId none = IR_NONE, y = ra >= 2 && rb >= 2 ? dec_qdq_matmul(c, a, b, false, &none) : IR_NONE;
    if (y == IR_NONE)
        y = ir_matmul(c->g, a, b, c->o);
    if (ra == 1 || rb == 1) {
        const IrType *ty = dec_ty(c, y);
        int64_t dims[IR_MAX_RANK];
        int n = 0;
        for (int i = 0; i < ty->rank; i++) {
            if ((ra == 1 && i == ty->rank - 2) || (rb == 1 && i == ty->rank - 1))
                continue;
            dims[n++] = ty->dims[i];
        }
        y = dec_reshape(c, y, dims, n);
    }
    c->out[0] = y;
    return true;
}

/* ---- Einsum ---- */

#define EL_BASE 52                         /* label ids of ellipsis dims start here */
#define NLABEL (EL_BASE + IR_MAX_RANK)
#define MAXOPS 16

typedef struct {
    ValId v;
    int n;                                 /* rank */
    int lab[IR_MAX_RANK];                  /* label of each axis */
} Term;

/* Label id of a letter. */
static int letter_id(char ch) { return islower((unsigned char)ch) ? ch - 'a' : ch - 'A' + 26; }

/* Parse one term ("ab...c") for an operand of rank `rank` (-1: output, ellipsis
 * rank given by emax). Fills lab/n; false on syntax errors. */
static bool parse_term(const char *s, size_t len, int rank, int emax, int *lab, int *n)
{
    int letters = 0, dots = 0;
    for (size_t i = 0; i < len; i++) {
        if (isalpha((unsigned char)s[i]))
            letters++;
        else if (s[i] == '.')
            dots++;
        else
            return false;
    }
    if (dots != 0 && dots != 3)
        return false;
    int erank = dots ? (rank >= 0 ? rank - letters : emax) : 0;
    if (erank < 0 || (rank >= 0 && !dots && letters != rank) || letters + erank > IR_MAX_RANK)
        return false;
    *n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int j = 0; j < erank; j++)
                lab[(*n)++] = EL_BASE + (emax - erank) + j;
            i += 2;
        } else {
            lab[(*n)++] = letter_id(s[i]);
        }
    }
    return true;
}

/* Position of label l in t, -1 if absent. */
static int find_lab(const Term *t, int l)
{
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] == l)
            return i;
    return -1;
}

/* Sum out the axes of t whose labels are not in keep[]. */
static void sum_out(DecCtx *c, Term *t, const bool *keep)
{
    int64_t axes[IR_MAX_RANK];
    int na = 0, m = 0;
    for (int i = 0; i < t->n; i++) {
        if (keep[t->lab[i]])
            t->lab[m++] = t->lab[i];
        else
            axes[na++] = i;
    }
    t->v = dec_reduce(c, IR_RED_SUM, t->v, axes, na, false);
    t->n = m;
}

/* Bring t to the label order `order` (all of t's labels) and merge groups into one
 * dim each: groups given by their sizes g[ng] (counts of labels). sizes[] receive
 * the original dims of each label; expand_to[] (if not NULL) broadcasts batch dims. */
static ValId arrange(DecCtx *c, const Term *t, const int *order, const int *g, int ng,
                     const int64_t *lsize)
{
    int64_t perm[IR_MAX_RANK], full[IR_MAX_RANK], merged[IR_MAX_RANK];
    for (int i = 0; i < t->n; i++) {
        perm[i] = find_lab(t, order[i]);
        full[i] = lsize[order[i]];
    }
    ValId v = dec_transpose(c, t->v, perm);
    v = dec_expand(c, v, full, t->n); /* broadcast size-1 batch dims */
    for (int k = 0, p = 0; k < ng; k++) {
        merged[k] = 1;
        for (int j = 0; j < g[k]; j++)
            merged[k] *= full[p++];
    }
    return dec_reshape(c, v, merged, ng);
}

/* Contract a and b, keeping labels with keep[] set. Result labels: batch, a-free,
 * b-free. */
static Term contract(DecCtx *c, Term *a, Term *b, const bool *keep, const int64_t *lsize)
{
    bool ka[NLABEL], kb[NLABEL];
    for (int l = 0; l < NLABEL; l++) {
        ka[l] = keep[l];
        kb[l] = keep[l];
    }
    for (int i = 0; i < b->n; i++)
        ka[b->lab[i]] = true;
    for (int i = 0; i < a->n; i++)
        kb[a->lab[i]] = true;
    sum_out(c, a, ka);
    sum_out(c, b, kb);
    int bat[IR_MAX_RANK], fa[IR_MAX_RANK], fb[IR_MAX_RANK], ct[IR_MAX_RANK];
    int nb = 0, nfa = 0, nfb = 0, nc = 0;
    for (int i = 0; i < a->n; i++) {
        int l = a->lab[i];
        if (find_lab(b, l) < 0)
            fa[nfa++] = l;
        else if (keep[l])
            bat[nb++] = l;
        else
            ct[nc++] = l;
    }
    for (int i = 0; i < b->n; i++)
        if (find_lab(a, b->lab[i]) < 0)
            fb[nfb++] = b->lab[i];
    int oa[IR_MAX_RANK], ob[IR_MAX_RANK], k = 0;
    for (int i = 0; i < nb; i++)
        oa[k++] = bat[i];
    for (int i = 0; i < nfa; i++)
        oa[k++] = fa[i];
    for (int i = 0; i < nc; i++)
        oa[k++] = ct[i];
    k = 0;
    for (int i = 0; i < nb; i++)
        ob[k++] = bat[i];
    for (int i = 0; i < nc; i++)
        ob[k++] = ct[i];
    for (int i = 0; i < nfb; i++)
        ob[k++] = fb[i];
    int ga[3] = {nb, nfa, nc}, gb[3] = {nb, nc, nfb};
    ValId va = arrange(c, a, oa, ga, 3, lsize), vb = arrange(c, b, ob, gb, 3, lsize);
    ValId y = ir_matmul(c->g, va, vb, c->o);
    Term r = {.n = 0};
    int64_t dims[IR_MAX_RANK];
    for (int i = 0; i < nb; i++)
        r.lab[r.n++] = bat[i];
    for (int i = 0; i < nfa; i++)
        r.lab[r.n++] = fa[i];
    for (int i = 0; i < nfb; i++)
        r.lab[r.n++] = fb[i];
    for (int i = 0; i < r.n; i++)
        dims[i] = lsize[r.lab[i]];
    r.v = dec_reshape(c, y, dims, r.n);
    return r;
}

/* Parse the equation into terms and the output labels. */
static bool parse_eq(DecCtx *c, const char *eq, Term *ops, int nops, int *out, int *nout)
{
    char buf[256];
    size_t m = 0;
    for (const char *p = eq; *p && m + 1 < sizeof buf; p++)
        if (!isspace((unsigned char)*p))
            buf[m++] = *p;
    buf[m] = 0;
    char *arrow = strstr(buf, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - buf) : m;
    int emax = 0, k = 0;
    size_t st = 0;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && buf[i] != ',')
            continue;
        if (k >= nops)
            return false;
        const IrType *t = dec_ty(c, ops[k].v);
        if (!parse_term(buf + st, i - st, t->rank, 0, ops[k].lab, &ops[k].n))
            return false;
        int letters = 0;
        for (size_t j = st; j < i; j++)
            letters += isalpha((unsigned char)buf[j]) != 0;
        if (t->rank - letters > emax && memchr(buf + st, '.', i - st))
            emax = t->rank - letters;
        k++;
        st = i + 1;
    }
    if (k != nops)
        return false;
    /* re-parse with the common ellipsis width so ellipsis labels align right */
    k = 0;
    st = 0;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && buf[i] != ',')
            continue;
        parse_term(buf + st, i - st, dec_ty(c, ops[k].v)->rank, emax, ops[k].lab, &ops[k].n);
        k++;
        st = i + 1;
    }
    if (arrow)
        return parse_term(arrow + 2, strlen(arrow + 2), -1, emax, out, nout);
    int cnt[NLABEL] = {0};
    for (int i = 0; i < nops; i++)
        for (int j = 0; j < ops[i].n; j++)
            cnt[ops[i].lab[j]]++;
    *nout = 0;
    for (int l = EL_BASE; l < EL_BASE + emax; l++)
        out[(*nout)++] = l;
    static const int ascii_order[52] = {26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38,
                                        39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51,
                                        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                                        13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25};
    for (int i = 0; i < 52; i++)
        if (cnt[ascii_order[i]] == 1 && *nout < IR_MAX_RANK)
            out[(*nout)++] = ascii_order[i];
    return true;
}

/* Replace the axes of label l that occur more than once in t (all of size d) by one
 * axis holding the diagonal, placed last: transpose the repeated axes to the end,
 * merge them into one of d^k elements and gather the entries i*(1+d+...+d^(k-1)). */
static bool take_diagonal(DecCtx *c, Term *t, int l)
{
    const IrType *ty = dec_ty(c, t->v);
    int64_t perm[IR_MAX_RANK], dims[IR_MAX_RANK], d = -1, stride = 0, merged = 1;
    int m = 0, k = 0;
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] != l) {
            dims[m] = ty->dims[i];
            perm[m++] = i;
        }
    for (int i = 0; i < t->n; i++)
        if (t->lab[i] == l) {
            if (d >= 0 && ty->dims[i] != d) {
                dec_err(c, "Einsum diagonal axes differ in size (%lld and %lld)",
                        (long long)d, (long long)ty->dims[i]);
                return false;
            }
            d = ty->dims[i];
            perm[m + k++] = i;
        }
    for (int j = 0; j < k; j++) {
        stride += merged;
        merged *= d;
    }
    ValId v = dec_transpose(c, t->v, perm);
    dims[m] = merged;
    v = dec_reshape(c, v, dims, m + 1);
    int64_t *idx = ir_scratch(c->g, sizeof(int64_t) * (size_t)(d + 1));
    for (int64_t i = 0; i < d; i++)
        idx[i] = i * stride;
    t->v = dec_gather(c, v, dec_const_i64(c->g, &d, 1, idx), m);
    int lab[IR_MAX_RANK];
    for (int i = 0; i < m; i++)
        lab[i] = t->lab[perm[i]];
    lab[m] = l;
    memcpy(t->lab, lab, sizeof(int) * (size_t)(m + 1));
    t->n = m + 1;
    return true;
}

/* Take every diagonal of every operand (labels repeated within one operand). */
static bool take_diagonals(DecCtx *c, Term *ops, int nops)
{
    for (int i = 0; i < nops; i++)
        for (int j = 0; j < ops[i].n; j++)
            for (int q = 0; q < j; q++)
                if (ops[i].lab[q] == ops[i].lab[j]) {
                    if (!take_diagonal(c, &ops[i], ops[i].lab[j]))
                        return false;
                    j = -1; /* labels were rearranged: scan this operand again */
                    break;
                }
    return true;
}

/* Label sizes (checking agreement; 1 broadcasts). */
static bool label_sizes(DecCtx *c, const Term *ops, int nops, int64_t *lsize)
{
    for (int l = 0; l < NLABEL; l++)
        lsize[l] = -1;
    for (int i = 0; i < nops; i++) {
        const IrType *t = dec_ty(c, ops[i].v);
        for (int j = 0; j < ops[i].n; j++) {
            int l = ops[i].lab[j];
            int64_t d = t->dims[j];
            if (lsize[l] < 0 || lsize[l] == 1)
                lsize[l] = d;
            else if (d != 1 && d != lsize[l]) {
                dec_err(c, "Einsum label sizes disagree (%lld and %lld)", (long long)d, (long long)lsize[l]);
                return false;
            }
        }
    }
    return true;
}

bool dec_einsum(DecCtx *c)
{
    int nops = c->n->nin, out[IR_MAX_RANK], nout;
    Term ops[MAXOPS];
    const char *eq = dec_as(c, "equation", "");
    if (nops < 1 || nops > MAXOPS) {
        dec_err(c, "unsupported: Einsum with %d operands", nops);
        return false;
    }
    for (int i = 0; i < nops; i++)
        ops[i].v = dec_in(c, i);
    if (!parse_eq(c, eq, ops, nops, out, &nout)) {
        dec_err(c, "cannot parse Einsum equation '%s'", eq);
        return false;
    }
    int64_t lsize[NLABEL];
    if (!take_diagonals(c, ops, nops) || !label_sizes(c, ops, nops, lsize))
        return false;
    Term cur = ops[0];
    for (int k = 1; k < nops; k++) {
        bool keep[NLABEL] = {false};
        for (int i = 0; i < nout; i++)
            keep[out[i]] = true;
        for (int j = k + 1; j < nops; j++)
            for (int i = 0; i < ops[j].n; i++)
                keep[ops[j].lab[i]] = true;
        cur = contract(c, &cur, &ops[k], keep, lsize);
    }
    bool keep[NLABEL] = {false};
    for (int i = 0; i < nout; i++)
        keep[out[i]] = true;
    sum_out(c, &cur, keep);
    if (cur.n != nout) {
        dec_err(c, "Einsum output labels do not all appear in the inputs");
        return false;
    }
    int64_t perm[IR_MAX_RANK];
    for (int i = 0; i < nout; i++) {
        perm[i] = find_lab(&cur, out[i]);
        if (perm[i] < 0) {
            dec_err(c, "Einsum output label not found in the inputs");
            return false;
        }
    }
    c->out[0] = dec_transpose(c, cur.v, perm);
    return true;
}
