/* spyrun_metrics.c: accuracy metrics of spyrun --check for reduced-precision bundles:
 * relative L2 error, cosine similarity and top-1 agreement per row of the last axis,
 * computed in double precision, and the pass thresholds of --metric NAME=VALUE.
 *
 * Non-finite elements: a position where both tensors hold NaN, or the same infinity,
 * matches and is left out of the sums; any other NaN or infinity in either makes the
 * relative L2 error infinite and the cosine NaN, so every threshold fails.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "dtconv.h"

/* Convert an IEEE half to double. */
static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return h & 0x8000 ? -v : v;
}

/* Element i of a host buffer of dtype dt as a double (integers exactly up to 2^53). */
double cli_elem_f(int dt, const void *p, size_t i)
{
    switch (dt) {
    case IR_DT_F32: return ((const float *)p)[i];
    case IR_DT_F64: return ((const double *)p)[i];
    case IR_DT_F16: return half_to_double(((const uint16_t *)p)[i]);
    case IR_DT_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)p)[i] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    case IR_DT_I8: case IR_DT_I4: case IR_DT_I2: return ((const int8_t *)p)[i];
    case IR_DT_U8: case IR_DT_BOOL: case IR_DT_U4: case IR_DT_U2: return ((const uint8_t *)p)[i];
    case IR_DT_F8E4M3FN: case IR_DT_F8E4M3FNUZ: case IR_DT_F8E5M2: case IR_DT_F8E5M2FNUZ:
    case IR_DT_F4E2M1: case IR_DT_F8E8M0:
        return spy_narrow_to_f32(((const uint8_t *)p)[i], dt);
    case IR_DT_I16: return ((const int16_t *)p)[i];
    case IR_DT_U16: return ((const uint16_t *)p)[i];
    case IR_DT_I32: return ((const int32_t *)p)[i];
    case IR_DT_U32: return ((const uint32_t *)p)[i];
    case IR_DT_I64: return (double)((const int64_t *)p)[i];
    case IR_DT_U64: return (double)((const uint64_t *)p)[i];
    default: return NAN;
    }
}

/* Index of the largest element of row x[0..len) (the first of equal ones; NaN counts
 * as largest), and in *second the largest of the others (-inf when len < 2). */
static size_t row_top2(int dt, const void *p, size_t base, size_t len, double *top,
                       double *second)
{
    size_t best = 0;
    double b = cli_elem_f(dt, p, base), s = -INFINITY;
    for (size_t j = 1; j < len; j++) {
        double v = cli_elem_f(dt, p, base + j);
        if (isnan(b))
            continue;
        if (v > b || isnan(v)) {
            s = b;
            b = v;
            best = j;
        } else if (v > s) {
            s = v;
        }
    }
    *top = b;
    *second = s;
    return best;
}

/* Top-1 agreement over the rows of length len (see cli_metrics). */
static void top1(int dt, const void *got, const void *exp, size_t n, size_t len, CliMetrics *m)
{
    m->has_top1 = true;
    for (size_t base = 0; base + len <= n; base += len) {
        double t, s, gt, gs;
        size_t want = row_top2(dt, exp, base, len, &t, &s);
        double gap = t - s;
        if (!(gap > 0 && gap >= 0.01 * fabs(t))) { /* NaN in the golden row too */
            m->top1_ambiguous++;
            continue;
        }
        m->top1_rows++;
        size_t have = row_top2(dt, got, base, len, &gt, &gs);
        if (have == want && !isnan(gt))
            m->top1_agree++;
    }
}

/* Metrics of got against the golden exp, n float elements of dtype dt whose last axis
 * has row_len elements (0 when the tensor is a scalar): relative L2 error
 * ||got - exp|| / ||exp|| (0 when both are zero, infinite when only exp is), cosine
 * similarity (1 when both are zero, 0 when one is), and with row_len >= 2 the top-1
 * agreement per row, counted on the rows whose golden top-1 exceeds its top-2 by at
 * least 1% of |top-1| (the others are ambiguous). */
void cli_metrics(int dt, const void *got, const void *exp, size_t n, int64_t row_len,
                 CliMetrics *m)
{
    memset(m, 0, sizeof *m);
    double dd = 0, ee = 0, gg = 0, ge = 0;
    bool bad = false;
    for (size_t i = 0; i < n; i++) {
        double g = cli_elem_f(dt, got, i), e = cli_elem_f(dt, exp, i);
        if (!isfinite(g) || !isfinite(e)) {
            if (!((isnan(g) && isnan(e)) || g == e))
                bad = true;
            continue;
        }
        dd += (g - e) * (g - e);
        ee += e * e;
        gg += g * g;
        ge += g * e;
    }
    m->rel_l2 = bad ? INFINITY : ee > 0 ? sqrt(dd) / sqrt(ee) : dd > 0 ? INFINITY : 0.0;
    m->cosine = bad ? NAN : (ee > 0 && gg > 0) ? ge / (sqrt(gg) * sqrt(ee)) : ee == gg ? 1.0 : 0.0;
    if (row_len >= 2 && n > 0)
        top1(dt, got, exp, n, (size_t)row_len, m);
}

static const char *const metric_names[CLI_MET_COUNT] = {"rel-l2", "cosine", "top1"};

/* Parse "NAME=VALUE" of --metric into spec: rel-l2 >= 0, cosine in [-1, 1], top1 in
 * [0, 1] (the fraction of unambiguous rows that must agree). false when malformed. */
bool cli_metric_parse(const char *s, CliMetricSpec *spec)
{
    const char *eq = strchr(s, '=');
    if (!eq)
        return false;
    for (int k = 0; k < CLI_MET_COUNT; k++) {
        size_t len = strlen(metric_names[k]);
        if ((size_t)(eq - s) != len || strncmp(s, metric_names[k], len) != 0)
            continue;
        char *end;
        double v = strtod(eq + 1, &end);
        if (end == eq + 1 || *end || !isfinite(v) || v < (k == CLI_MET_COSINE ? -1 : 0) ||
            (k != CLI_MET_REL_L2 && v > 1))
            return false;
        spec->set[k] = true;
        spec->thr[k] = v;
        return true;
    }
    return false;
}

/* Whether any --metric was given. */
bool cli_metric_any(const CliMetricSpec *spec)
{
    for (int k = 0; k < CLI_MET_COUNT; k++)
        if (spec->set[k])
            return true;
    return false;
}

/* The pass thresholds that each --precision flag in META implies (the README's). */
static const struct {
    const char *flag;
    CliMetricSpec spec;
} metric_defs[] = {
    {"--precision fp16", {{true, true, true}, {2e-2, 0.999, 1.0}}},
    {"--precision int8", {{true, true, false}, {0.1, 0.99, 0}}},
    {"--precision fp8", {{true, true, false}, {5e-2, 0.99, 0}}},
};

/* The fp16 thresholds, for a float16 or bfloat16 output checked without --metric,
 * --rtol or --atol: its golden holds float16 roundings of its own (an exporter's or
 * onnxruntime's float16 arithmetic), which a few ulps of a different but equally valid
 * order of float16 operations exceed under the elementwise rule. */
void cli_metric_half_defaults(CliMetricSpec *spec)
{
    *spec = metric_defs[0].spec;
}

uint64_t cli_half_outputs_mask(const char *meta)
{
    const char *f = meta ? strstr(meta, "half_outputs=") : NULL;
    uint64_t mask = 0;
    if (!f || (f != meta && f[-1] != '\n'))
        return 0;
    for (const char *p = f + strlen("half_outputs="); *p && *p != '\n';) {
        char *end;
        unsigned long k = strtoul(p, &end, 10);
        if (end == p)
            break;
        if (k < 64)
            mask |= 1ull << k;
        p = *end == ',' ? end + 1 : end;
    }
    return mask;
}

/* The pass thresholds of a reduced-precision bundle: when spec has none and the
 * bundle's META flags line (spy_model_meta) records "--precision P", spec gets P's
 * defaults (the README's): fp16 rel-l2 2e-2, cosine 0.999 and top1 1; int8 (W8A8)
 * rel-l2 0.1 and cosine 0.99; fp8 (e4m3 weights) rel-l2 5e-2 and cosine 0.99.
 * Returns P's name ("fp16", "int8", "fp8") when it did, else NULL. */
const char *cli_metric_precision_defaults(const char *meta, CliMetricSpec *spec)
{
    const char *f = meta ? strstr(meta, "flags=") : NULL;
    if (!f || cli_metric_any(spec))
        return NULL;
    size_t len = strcspn(f, "\n");
    for (size_t d = 0; d < sizeof metric_defs / sizeof metric_defs[0]; d++) {
        size_t fl = strlen(metric_defs[d].flag);
        for (const char *p = f; (p = strstr(p, metric_defs[d].flag)) && p < f + len; p++) {
            char next = p[fl];
            if ((p[-1] == '=' || p[-1] == ' ') && (next == ' ' || next == '\n' || next == '\0')) {
                *spec = metric_defs[d].spec;
                return metric_defs[d].flag + 12;
            }
        }
    }
    return NULL;
}

/* Whether m meets every threshold of spec (top1 holds when there are no counted rows);
 * when not, why names the first failing one ("rel-l2 0.05 > 0.02"). */
bool cli_metrics_pass(const CliMetrics *m, const CliMetricSpec *spec, char *why, size_t n)
{
    double frac = m->top1_rows ? (double)m->top1_agree / (double)m->top1_rows : 1.0;
    if (spec->set[CLI_MET_REL_L2] && !(m->rel_l2 <= spec->thr[CLI_MET_REL_L2])) {
        snprintf(why, n, "rel-l2 %.3g > %.3g", m->rel_l2, spec->thr[CLI_MET_REL_L2]);
        return false;
    }
    if (spec->set[CLI_MET_COSINE] && !(m->cosine >= spec->thr[CLI_MET_COSINE])) {
        snprintf(why, n, "cosine %.8f < %.8g", m->cosine, spec->thr[CLI_MET_COSINE]);
        return false;
    }
    if (spec->set[CLI_MET_TOP1] && m->has_top1 && !(frac >= spec->thr[CLI_MET_TOP1])) {
        snprintf(why, n, "top1 %zu/%zu < %.4g", m->top1_agree, m->top1_rows,
                 spec->thr[CLI_MET_TOP1]);
        return false;
    }
    return true;
}

/* Print the metrics line: "  rel-l2 R, cosine C[, top1 A/N (K rows ambiguous)]". */
void cli_metrics_print(FILE *f, const CliMetrics *m)
{
    fprintf(f, "  rel-l2 %.3g, cosine %.8f", m->rel_l2, m->cosine);
    if (m->has_top1)
        fprintf(f, ", top1 %zu/%zu (%zu rows ambiguous)", m->top1_agree, m->top1_rows,
                m->top1_ambiguous);
    fputc('\n', f);
}
