/* onnx_tfidf.c: TfIdfVectorizer over integer tokens as core ops.
 *
 * The n-gram pool is a compile-time table. For every n-gram size n in
 * [min_gram_length, max_gram_length] and every skip distance d (1 only for
 * unigrams, 1..max_skip_count+1 otherwise), the token at offset k*d of every start
 * position is compared (EQ) with the k-th token of all pool n-grams of that size at
 * once, the comparisons are ANDed over k and summed over positions: counts
 * [B, G_n]. A constant one-hot MATMUL maps the G_n n-grams to their output columns
 * (ngram_indexes). TF, IDF and TFIDF weightings follow. String pools are refused.
 */
#include <string.h>

#include "onnx.h"

#define TFIDF_MAX_GRAM 16                 /* longest n-gram supported */

/* The TfIdfVectorizer attributes. */
typedef struct {
    int64_t min_n, max_n, max_skip, nout;
    const int64_t *counts, *indexes, *pool;
    int ncounts, nindexes, npool;
    const double *weights;
    int nweights;
} TfIdf;

/* Pool entries of size n: first index in the pool and how many n-grams; the
 * n-gram ids (for ngram_indexes) of the size start at *id0. */
static void pool_range(const TfIdf *t, int64_t n, int64_t *start, int64_t *count, int64_t *id0)
{
    int64_t id = 0;
    *start = *count = 0;
    for (int64_t i = 0; i < t->ncounts; i++) {
        int64_t s = t->counts[i], e = i + 1 < t->ncounts ? t->counts[i + 1] : t->npool;
        int64_t g = (e - s) / (i + 1);
        if (i + 1 == n) {
            *start = s;
            *count = g;
            *id0 = id;
            return;
        }
        id += g;
    }
    *id0 = id;
}

/* Counts [B, G] of the G pool n-grams of size n starting at pool[start] in x [B, L]. */
static ValId ngram_counts(DecCtx *c, const TfIdf *t, ValId x, int64_t n, int64_t start, int64_t g)
{
    const IrType *tx = dec_ty(c, x);
    int64_t b = tx->dims[0], len = tx->dims[1], maxd = n == 1 ? 1 : t->max_skip + 1;
    ValId total = IR_NONE;
    for (int64_t d = 1; d <= maxd; d++) {
        int64_t pos = len - (n - 1) * d;
        if (pos <= 0)
            break;
        ValId all = IR_NONE;
        for (int64_t k = 0; k < n; k++) {
            int64_t *tok = ir_scratch(c->g, sizeof(int64_t) * (size_t)g);
            for (int64_t j = 0; j < g; j++)
                tok[j] = t->pool[start + j * n + k];
            int64_t td[3] = {1, 1, g}, xd[3] = {b, pos, 1};
            ValId tk = dec_cast(c, dec_const_i64(c->g, td, 3, tok), tx->dtype);
            ValId xs = dec_reshape(c, dec_slice_axis(c, x, 1, k * d, 1, pos), xd, 3);
            ValId eq = dec_bin(c, IR_BIN_EQ, xs, tk);
            all = all == IR_NONE ? eq : dec_bin(c, IR_BIN_AND, all, eq);
        }
        int64_t ax = 1;
        ValId cnt = dec_reduce(c, IR_RED_SUM, dec_cast(c, all, IR_DT_F32), &ax, 1, false);
        total = total == IR_NONE ? cnt : dec_bin(c, IR_BIN_ADD, total, cnt);
    }
    return total;
}

/* [G, nout] one-hot map of n-grams id0..id0+G-1 to their output columns; an n-gram
 * that repeats later in the pool maps nowhere (the later one counts). */
static ValId column_map(DecCtx *c, const TfIdf *t, int64_t n, int64_t start, int64_t g, int64_t id0)
{
    float *m = ir_scratch(c->g, sizeof(float) * (size_t)(g * t->nout));
    for (int64_t j = 0; j < g; j++) {
        bool later = false;
        for (int64_t q = j + 1; q < g && !later; q++)
            later = !memcmp(&t->pool[start + j * n], &t->pool[start + q * n], sizeof(int64_t) * (size_t)n);
        if (!later)
            m[j * t->nout + t->indexes[id0 + j]] = 1.0f;
    }
    int64_t d[2] = {g, t->nout};
    return dec_const_f32(c->g, d, 2, m);
}

/* Read and check the attributes. */
static bool tfidf_attrs(DecCtx *c, TfIdf *t)
{
    memset(t, 0, sizeof *t);
    t->min_n = dec_ai(c, "min_gram_length", 0);
    t->max_n = dec_ai(c, "max_gram_length", 0);
    t->max_skip = dec_ai(c, "max_skip_count", 0);
    t->ncounts = dec_aints(c, "ngram_counts", &t->counts);
    t->nindexes = dec_aints(c, "ngram_indexes", &t->indexes);
    t->npool = dec_aints(c, "pool_int64s", &t->pool);
    const IrAttr *w = ir_attr_find(c->n, "weights");
    if (w && w->kind == IR_ATTR_FLOATS) {
        t->weights = w->floats;
        t->nweights = (int)w->n;
    }
    if (t->npool < 0) {
        dec_err(c, "unsupported: TfIdfVectorizer without pool_int64s (string pools)");
        return false;
    }
    if (t->min_n < 1 || t->max_n < t->min_n || t->max_n > TFIDF_MAX_GRAM || t->max_skip < 0 ||
        t->ncounts < 1 || t->nindexes < 1) {
        dec_err(c, "bad gram lengths, max_skip_count, ngram_counts or ngram_indexes");
        return false;
    }
    int64_t ngrams = 0;
    for (int i = 0; i < t->ncounts; i++) {
        int64_t e = i + 1 < t->ncounts ? t->counts[i + 1] : t->npool;
        if (t->counts[i] < 0 || e < t->counts[i] || e > t->npool) {
            dec_err(c, "ngram_counts do not fit the pool");
            return false;
        }
        ngrams += (e - t->counts[i]) / (i + 1);
    }
    for (int i = 0; i < t->nindexes; i++)
        t->nout = t->indexes[i] + 1 > t->nout ? t->indexes[i] + 1 : t->nout;
    for (int i = 0; i < t->nindexes; i++)
        if (t->indexes[i] < 0) {
            dec_err(c, "negative ngram_indexes entry");
            return false;
        }
    if (ngrams > t->nindexes || (t->nweights && t->nweights < t->nout)) {
        dec_err(c, "ngram_indexes (%d) or weights (%d) do not match the pool (%lld n-grams)",
                t->nindexes, t->nweights, (long long)ngrams);
        return false;
    }
    return true;
}

/* Apply the weighting mode to counts [B, nout]. */
static bool tfidf_weight(DecCtx *c, const TfIdf *t, ValId *y)
{
    const char *mode = dec_as(c, "mode", "TF");
    ValId w = IR_NONE;
    if (t->nweights) {
        float *wv = ir_scratch(c->g, sizeof(float) * (size_t)t->nout);
        for (int64_t i = 0; i < t->nout; i++) /* weight of output column i */
            wv[i] = (float)t->weights[i];
        int64_t d[2] = {1, t->nout};
        w = dec_const_f32(c->g, d, 2, wv);
    }
    if (!strcmp(mode, "IDF")) {
        ValId one = w != IR_NONE ? w : dec_scalar(c->g, IR_DT_F32, 1);
        *y = dec_select(c, dec_bin_s(c, IR_BIN_GT, *y, 0), one, dec_scalar(c->g, IR_DT_F32, 0));
    } else if (!strcmp(mode, "TFIDF")) {
        if (w != IR_NONE)
            *y = dec_bin(c, IR_BIN_MUL, *y, w);
    } else if (strcmp(mode, "TF")) {
        dec_err(c, "unknown mode '%s' (TF, IDF, TFIDF)", mode);
        return false;
    }
    return true;
}

bool dec_tfidf(DecCtx *c)
{
    ValId x = dec_in(c, 0);
    TfIdf t;
    if (x == IR_NONE || !tfidf_attrs(c, &t))
        return false;
    const IrType *tx = dec_ty(c, x);
    if ((tx->rank != 1 && tx->rank != 2) || !ir_dtype_is_int(tx->dtype)) {
        dec_err(c, "unsupported: input must be a 1-D or 2-D integer tensor");
        return false;
    }
    bool one = tx->rank == 1;
    int64_t b = one ? 1 : tx->dims[0], len = tx->dims[tx->rank - 1], bl[2] = {b, len};
    x = dec_reshape(c, x, bl, 2);
    int64_t zd[2] = {b, t.nout};
    ValId y = dec_expand(c, dec_scalar(c->g, IR_DT_F32, 0), zd, 2);
    for (int64_t n = t.min_n; n <= t.max_n; n++) {
        int64_t start, g, id0;
        pool_range(&t, n, &start, &g, &id0);
        if (g == 0)
            continue;
        ValId cnt = ngram_counts(c, &t, x, n, start, g);
        if (cnt != IR_NONE)
            y = dec_bin(c, IR_BIN_ADD, y, ir_matmul(c->g, cnt, column_map(c, &t, n, start, g, id0), c->o));
    }
    if (!tfidf_weight(c, &t, &y))
        return false;
    int64_t od[1] = {t.nout};
    c->out[0] = one ? dec_reshape(c, y, od, 1) : y;
    return true;
}
