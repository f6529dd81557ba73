/* spyrec_bucketgrid.c: which boxes of the symbolic dimensions get a size bucket
 * (cli_bucket_grid; spyrec_buckets.h states the rule, sbin.md "Size buckets" too).
 *
 * The choice takes a size to run at about the cost of the smallest box (by volume, the
 * product of its sizes) that holds it: its waste is the box's volume over its own (the
 * runtime takes the holding box of least modelled time, which guards can make a larger
 * one; the volume is what is known before the buckets are compiled).
 * The boxes are chosen to keep the expected waste small:
 *   - symbols bounded alike (the same min and max: an image's height and width) form
 *     one class and take one value in every box, so boxes are diagonal (1x256x256),
 *     not a Cartesian product of per-symbol values that spends buckets on shapes such
 *     as 1x512x32; a size off the diagonal runs in the box of its largest member;
 *   - a class takes min, max and the numbers between with at most three significant
 *     bits (1 2 3 4 5 6 7 8 10 12 14 16 20 ... 224 256 320: steps of at most 1.25,
 *     multiples of large powers of two, which strided shapes divide evenly);
 *   - sizes are taken log-uniform over each class's range (weight 1/x for each
 *     integer x, every member of a class the same size), the classes independent;
 *   - from the bounds' box, boxes of that grid are added one at a time, each the one
 *     that lowers the expected waste the most (the first in grid order of a tie),
 *     until there are `limit` - 1 boxes or none lowers it;
 *   - the last is the minimum's box (every class at its min) when the choice left it
 *     out, else one more of the greedy kind: the smallest size is a common one (batch
 *     1, the shortest prompt) and the one where a box's margin costs the most against
 *     its own work, while a log-uniform weight gives it little mass (one point of a
 *     wide range). It is taken last so that it leaves the greedy choice as it was.
 * The sums are exact (term by term) below 2^22 terms, so the choice does not depend on
 * the C library's log or pow for the ranges met in practice.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cli/spyrec_buckets.h"

#define MAX_VALUES 256           /* three-bit numbers in int64: 3 + 4 * 60, plus min, max */
#define MAX_CELLS 1024           /* grid points the choice looks at (values thinned above) */
#define EXACT_TERMS (1 << 22)    /* sums of x^-p term by term up to this many terms */

/* One class: the symbols bounded alike and the values its boxes take. */
typedef struct {
    int64_t min, max;
    int members;                 /* symbols in the class */
    int n;                       /* values */
    int64_t vals[MAX_VALUES];
    double weight[MAX_VALUES];   /* sum of x^-(1 + members) over (vals[i-1], vals[i]], / norm */
} GridClass;

/* The values of class c: min, the numbers between with at most three significant bits
 * (1, 2, 3, then m * 2^k for m = 4..7), max. */
static void class_values(GridClass *c)
{
    int n = 0;
    c->vals[n++] = c->min;
    for (int64_t x = 1; x <= 3; x++)
        if (x > c->min && x < c->max)
            c->vals[n++] = x;
    for (int k = 0; k < 60; k++)
        for (int64_t m = 4; m < 8; m++)
            if ((m << k) > c->min && (m << k) < c->max)
                c->vals[n++] = m << k;
    if (c->max > c->min)
        c->vals[n++] = c->max;
    c->n = n;
}

/* Drop one value of class c: the one between min and max whose neighbours are closest
 * (by ratio; the smaller of a tie), or min when only min and max are left. */
static void thin_class(GridClass *c)
{
    int r = 0;
    double best = 0;
    for (int i = 1; i + 1 < c->n; i++) {
        double q = (double)c->vals[i + 1] / (double)c->vals[i - 1];
        if (r == 0 || q < best) {
            best = q;
            r = i;
        }
    }
    memmove(&c->vals[r], &c->vals[r + 1], (size_t)(c->n - 1 - r) * sizeof c->vals[0]);
    c->n--;
}

/* Sum of x^-p over the integers a..b (a >= 1): term by term, or by the integral over
 * [a - 1/2, b + 1/2] for the terms past EXACT_TERMS. */
static double sum_pow(int64_t a, int64_t b, int p)
{
    double s = 0;
    int64_t x = a;
    for (; x <= b && x - a < EXACT_TERMS; x++) {
        double t = 1;
        for (int i = 0; i < p; i++)
            t /= (double)x;
        s += t;
    }
    if (x <= b) {
        double lo = (double)x - 0.5, hi = (double)b + 0.5;
        s += p == 1 ? log(hi / lo) : (pow(lo, 1 - p) - pow(hi, 1 - p)) / (p - 1);
    }
    return s;
}

/* The weights of class c: for value i, the probability of a size in (vals[i-1],
 * vals[i]] (min alone for i = 0) times the mean of size^-members there. */
static void class_weights(GridClass *c)
{
    double norm = sum_pow(c->min, c->max, 1);
    int64_t prev = c->min - 1;
    for (int i = 0; i < c->n; i++) {
        c->weight[i] = sum_pow(prev + 1, c->vals[i], 1 + c->members) / norm;
        prev = c->vals[i];
    }
}

/* Groups the symbols into classes (cls[s]: the class of symbol s); returns how many. */
static int make_classes(const int64_t *min, const int64_t *max, int nsyms, GridClass *cs,
                        int *cls)
{
    int nc = 0;
    for (int s = 0; s < nsyms; s++) {
        int c = 0;
        while (c < nc && (cs[c].min != min[s] || cs[c].max != max[s]))
            c++;
        if (c == nc)
            cs[nc++] = (GridClass){.min = min[s], .max = max[s]};
        cs[c].members++;
        cls[s] = c;
    }
    return nc;
}

/* The grid of the classes' values, its cells numbered in mixed radix (class 0 fastest):
 * per cell its value index per class, the weight of its sizes and its volume. */
typedef struct {
    int nc, ncells;
    uint16_t *digit;             /* ncells x nc */
    double *weight, *volume, *best;   /* best: volume of the box a cell's sizes run in */
    bool *chosen;
} Grid;

/* Fills the grid of classes cs (nc of them), the bounds' box chosen; false when out
 * of memory. */
static bool grid_build(Grid *g, const GridClass *cs, int nc)
{
    g->nc = nc;
    g->ncells = 1;
    for (int c = 0; c < nc; c++)
        g->ncells *= cs[c].n;
    size_t n = (size_t)g->ncells;
    g->digit = malloc(n * (size_t)nc * sizeof *g->digit);
    g->weight = malloc(n * sizeof *g->weight);
    g->volume = malloc(n * sizeof *g->volume);
    g->best = malloc(n * sizeof *g->best);
    g->chosen = calloc(n, sizeof *g->chosen);
    if (!g->digit || !g->weight || !g->volume || !g->best || !g->chosen)
        return false;
    for (int k = 0; k < g->ncells; k++) {
        int rest = k;
        g->weight[k] = g->volume[k] = 1;
        for (int c = 0; c < nc; c++) {
            int i = rest % cs[c].n;
            rest /= cs[c].n;
            g->digit[(size_t)k * (size_t)nc + (size_t)c] = (uint16_t)i;
            g->weight[k] *= cs[c].weight[i];
            for (int m = 0; m < cs[c].members; m++)
                g->volume[k] *= (double)cs[c].vals[i];
        }
    }
    int top = g->ncells - 1;      /* every class at its max: the bounds */
    for (int k = 0; k < g->ncells; k++)
        g->best[k] = g->volume[top];
    g->chosen[top] = true;
    return true;
}

static void grid_free(Grid *g)
{
    free(g->digit);
    free(g->weight);
    free(g->volume);
    free(g->best);
    free(g->chosen);
}

/* Does box cell b hold the sizes of cell k (each value index at most b's)? */
static bool holds(const Grid *g, int b, int k)
{
    const uint16_t *db = g->digit + (size_t)b * (size_t)g->nc;
    const uint16_t *dk = g->digit + (size_t)k * (size_t)g->nc;
    for (int c = 0; c < g->nc; c++)
        if (dk[c] > db[c])
            return false;
    return true;
}

/* How much adding box cell b lowers the expected waste. */
static double gain(const Grid *g, int b)
{
    double s = 0;
    for (int k = 0; k <= b; k++)
        if (g->best[k] > g->volume[b] && holds(g, b, k))
            s += g->weight[k] * (g->best[k] - g->volume[b]);
    return s;
}

/* Adds box cell b: the sizes it holds that ran in a larger box run in it. */
static void grid_take(Grid *g, int b)
{
    g->chosen[b] = true;
    for (int k = 0; k <= b; k++)
        if (g->best[k] > g->volume[b] && holds(g, b, k))
            g->best[k] = g->volume[b];
}

/* Adds the box that lowers the expected waste the most; false when none does. */
static bool grid_add(Grid *g)
{
    int pick = -1;
    double most = 0;
    for (int b = 0; b < g->ncells; b++) {
        double d = g->chosen[b] ? 0 : gain(g, b);
        if (d > most) {
            most = d;
            pick = b;
        }
    }
    if (pick < 0)
        return false;
    grid_take(g, pick);
    return true;
}

/* Chooses the boxes, at most limit with the bounds': the greedy ones, then the
 * minimum's (cell 0) when the greedy choice left it out. */
static void grid_choose(Grid *g, int limit)
{
    int k = 1;
    while (k < limit - 1 && grid_add(g))
        k++;
    if (g->ncells > 1 && !g->chosen[0])
        grid_take(g, 0);
    else if (k < limit)
        grid_add(g);
}

/* Symbols per box, for cmp_box (qsort passes no context). */
static int g_nsyms;

/* Orders two boxes (g_nsyms caps each) by product, then caps. */
static int cmp_box(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    double px = 1, py = 1;
    for (int i = 0; i < g_nsyms; i++) {
        px *= (double)x[i];
        py *= (double)y[i];
    }
    if (px != py)
        return px < py ? -1 : 1;
    for (int i = 0; i < g_nsyms; i++)
        if (x[i] != y[i])
            return x[i] < y[i] ? -1 : 1;
    return 0;
}

/* The boxes of the chosen cells but the bounds' into boxes (at most cap); returns how
 * many, ordered by product, then lexicographically. */
static int grid_boxes(const Grid *g, const GridClass *cs, const int *cls, int nsyms,
                      int64_t *boxes, int cap)
{
    int nb = 0;
    for (int k = 0; k + 1 < g->ncells && nb < cap; k++) {
        if (!g->chosen[k])
            continue;
        for (int s = 0; s < nsyms; s++) {
            int c = cls[s], i = g->digit[(size_t)k * (size_t)g->nc + (size_t)c];
            boxes[(size_t)nb * (size_t)nsyms + (size_t)s] = cs[c].vals[i];
        }
        nb++;
    }
    g_nsyms = nsyms;
    qsort(boxes, (size_t)nb, (size_t)nsyms * sizeof *boxes, cmp_box);
    return nb;
}

int cli_bucket_grid(const int64_t *min, const int64_t *max, int nsyms, int limit,
                    int64_t *boxes, int cap)
{
    GridClass *cs = nsyms >= 1 && nsyms <= 64 && limit >= 2 && cap >= 1
                        ? calloc((size_t)nsyms, sizeof *cs)   /* 4 KiB each */
                        : NULL;
    if (!cs)
        return 0;
    int cls[64], nc = make_classes(min, max, nsyms, cs, cls);
    double cells = 1;
    for (int c = 0; c < nc; c++) {
        class_values(&cs[c]);
        cells *= cs[c].n;
    }
    while (cells > MAX_CELLS) {  /* thin the class with the most values */
        int w = 0;
        for (int c = 1; c < nc; c++)
            if (cs[c].n > cs[w].n)
                w = c;
        cells = cells / cs[w].n * (cs[w].n - 1);
        thin_class(&cs[w]);
    }
    for (int c = 0; c < nc; c++)
        class_weights(&cs[c]);
    Grid g = {0};
    int nb = 0;
    if (grid_build(&g, cs, nc)) {
        grid_choose(&g, limit);
        nb = grid_boxes(&g, cs, cls, nsyms, boxes, cap);
    }
    grid_free(&g);
    free(cs);
    return nb;
}
