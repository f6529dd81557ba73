/* convcost.c: the DRAM bytes the row chunks of a convolution's work items are charged
 * (whole sticks, schemas/costmodel.h), averaged over the chunks, for pass_divide's
 * choice of output-row chunks (divide.c conv_divide).
 *
 * A chunk's runs start where its first row falls in a stick, so the charge varies from
 * chunk to chunk; it depends on a chunk's offset only modulo the stick, so chunks one
 * step apart repeat with a period of at most a stick's bytes (stick_period). The
 * chunks away from the map's edges are charged by whole periods, the rest one by one:
 * the same whole-stick sum as walking every chunk, in time independent of the map's
 * height (walking them, a fuzzed model's 6.3 million-row resize into a convolution
 * compiled in 9 s, most of it here; now 5).
 */
#include <stdint.h>

#include "convcost.h"
#include "costmodel.h"

/* Chunks after which the stick residues of offsets step bytes apart repeat: the
 * charge of a transfer (cost_transfer_bytes) depends on its offset only modulo the
 * stick, so the charges of chunks one step apart repeat with this period. */
static int64_t stick_period(const SpyTarget *t, int64_t step)
{
    return cost_residue_period(t->stick_bytes > 0 ? t->stick_bytes : 1, step);
}

/* Bytes charged for the input rows of output-row chunk j (rc rows): nb runs of span
 * rows (one per tap row when banded) clamped to the input's h rows. */
static double conv_chunk_rows_bytes(const SpyTarget *t, const IrGeom *geo, int64_t es,
                                    int64_t rc, int64_t j, int64_t nb, int64_t span)
{
    int64_t h = geo->in_ext[0], w = geo->in_ext[1];
    double sum = 0;
    for (int64_t b = 0; b < nb; b++) {
        int64_t lo = j * rc * geo->s2[0] - geo->pad_lo[0] + b * geo->d2[0], hi = lo + span;
        lo = lo > 0 ? lo : 0;
        hi = hi < h ? hi : h;
        uint32_t dims[3] = {(uint32_t)geo->cg, (uint32_t)(hi > lo ? hi - lo : 0), (uint32_t)w};
        int32_t st[3] = {(int32_t)(h * w), (int32_t)w, 1};
        sum += (double)cost_transfer_bytes(t, lo * w * es, es, 3, dims, st);
    }
    return sum;
}

/* Bytes charged (whole sticks, costmodel.h) for the input rows an output-row chunk of
 * rc rows reads, [cg channels, rows, width] of a dense NCHW-like input, averaged over
 * the chunks' positions: a chunk's runs start where its first row falls in a stick.
 * The chunks whose runs all lie inside the input are charged by whole periods of
 * their stick residues (stick_period), the others one by one. */
double pass_conv_rows_bytes(const SpyTarget *t, const IrGeom *geo, int64_t es, int64_t rc,
                            int64_t ext)
{
    int64_t h = geo->in_ext[0], w = geo->in_ext[1], n = (ext + rc - 1) / rc;
    int64_t rin = plan_patch_rows(geo, rc);
    bool banded = plan_patch_banded(geo, rc);      /* one run of rows per tap */
    int64_t nb = banded ? geo->k2[0] : 1, span = banded ? plan_patch_band(geo, rc) : rin;
    if (h * w > INT32_MAX || n <= 0)
        return cost_rows_bytes(t, (double)geo->cg * (double)rin, (double)(es * w));
    /* inside: chunks [j0, j1) whose nb runs need no clamping */
    int64_t rs = rc * geo->s2[0], last = (nb - 1) * geo->d2[0] + span;
    int64_t room = h - last + geo->pad_lo[0];     /* the last inside starts here */
    int64_t j0 = (geo->pad_lo[0] + rs - 1) / rs, j1 = room < 0 ? 0 : room / rs + 1;
    j1 = j1 < n ? j1 : n;
    int64_t per = stick_period(t, rs * w * es);
    double sum = 0;
    if (j0 < 0 || j1 - j0 < 2 * per) {
        for (int64_t j = 0; j < n; j++)
            sum += conv_chunk_rows_bytes(t, geo, es, rc, j, nb, span);
        return sum / (double)n;
    }
    for (int64_t j = 0; j < j0; j++)
        sum += conv_chunk_rows_bytes(t, geo, es, rc, j, nb, span);
    for (int64_t j = j1; j < n; j++)
        sum += conv_chunk_rows_bytes(t, geo, es, rc, j, nb, span);
    double period = 0, part = 0;
    int64_t whole = (j1 - j0) / per, rest = (j1 - j0) % per;
    for (int64_t j = 0; j < per; j++) {
        double c = conv_chunk_rows_bytes(t, geo, es, rc, j0 + j, nb, span);
        period += c;
        part += j < rest ? c : 0;
    }
    return (sum + (double)whole * period + part) / (double)n;
}

/* Bytes charged for storing output-row chunk j of pass_conv_out_bytes: rc of the ext
 * rows (the last chunk may be shorter) of all m channels. */
static double conv_chunk_out_bytes(const SpyTarget *t, int64_t eo, int64_t m, int64_t rc,
                                   int64_t ext, int64_t pix, int64_t j)
{
    int64_t r0 = j * rc, rows = ext - r0 < rc ? ext - r0 : rc;
    uint32_t dims[2] = {(uint32_t)m, (uint32_t)(rows * pix)};
    int32_t st[2] = {(int32_t)(ext * pix), 1};
    return (double)cost_transfer_bytes(t, r0 * pix * eo, eo, 2, dims, st);
}

/* Bytes charged (whole sticks) for storing the output tile of one CONV item, mt of the
 * m output channels by rc of the ext output rows of pix elements each (a dense
 * NCHW-like output: a channel's rows are one run, channels a plane apart), averaged
 * over the items: a chunk's runs start where its first row falls in a stick, which
 * moves with the channel when a plane is not whole sticks (a 28 x 28 fp16 plane is
 * 12.25 sticks: a 4-row run of 224 bytes then touches 2.5 sticks on average). Summed
 * over the row chunks of all m channels, shared by the ceil(m / mt) channel tiles. The
 * whole chunks are charged by periods of their stick residues, as the input's are. */
double pass_conv_out_bytes(const SpyTarget *t, int64_t eo, int64_t m, int64_t mt, int64_t rc,
                           int64_t ext, int64_t pix)
{
    int64_t n = (ext + rc - 1) / rc, tiles = (m + mt - 1) / mt;
    if (ext * pix > INT32_MAX || m > UINT32_MAX || n <= 0 || tiles <= 0)
        return cost_rows_bytes(t, (double)mt, (double)(eo * rc * pix));
    int64_t whole = n - 1, per = stick_period(t, rc * pix * eo); /* the last may be short */
    double sum = conv_chunk_out_bytes(t, eo, m, rc, ext, pix, n - 1);
    if (whole < 2 * per) {
        for (int64_t j = 0; j < whole; j++)
            sum += conv_chunk_out_bytes(t, eo, m, rc, ext, pix, j);
        return sum / (double)(n * tiles);
    }
    double period = 0, part = 0;
    for (int64_t j = 0; j < per; j++) {
        double c = conv_chunk_out_bytes(t, eo, m, rc, ext, pix, j);
        period += c;
        part += j < whole % per ? c : 0;
    }
    return (sum + (double)(whole / per) * period + part) / (double)(n * tiles);
}
